#include "bundle/trust_store.hpp"

#include <sys/stat.h>

#include <kiln/errors.hpp>

#include "bundle/hash.hpp"
#include "files/files.hpp"
#include "files/locks.hpp"
#include "support/fault_point.hpp"

namespace kiln::bundle {
namespace {

namespace fs = boost::filesystem;

bool exists_here(const fs::path &file) {
  struct stat st {};
  return ::lstat(file.c_str(), &st) == 0;
}

struct FoundList {
  KeyList list;
  std::string file;
};

std::optional<FoundList> read_list_file(const fs::path &file) {
  std::string text;
  try {
    text = files::read_file(file, files::FileOrigin::store, kMaxKeyListBytes);
  } catch (const NotFoundError &) {
    return std::nullopt;
  }
  return FoundList{parse_key_list(text, file.string()), file.string()};
}

}  // namespace

fs::path trust_dir(const fs::path &store_root) { return store_root / "trust"; }

TrustState read_trust(const std::vector<fs::path> &store_roots) {
  TrustState state;
  std::vector<FoundList> lists;
  for (const auto &root : store_roots) {
    const fs::path anchor_file = trust_dir(root) / "root.pub";
    if (exists_here(anchor_file)) {
      PublicKey anchor = read_public_key(anchor_file.string());
      if (!state.anchor) {
        state.anchor = anchor;
      } else if (anchor.key_id != state.anchor->key_id) {
        throw UsageError("two stores pin different root keys: " + state.anchor->file + " (" + state.anchor->key_id +
                         ") and " + anchor.file + " (" + anchor.key_id +
                         "); a store follows one root (remove the writable cache's trust/root.pub if the layer's is "
                         "the one this robot should trust)");
      }
    }
    if (auto found = read_list_file(trust_dir(root) / "keys.json")) lists.push_back(std::move(*found));
  }
  if (!state.anchor) {
    if (!lists.empty()) {
      throw UsageError("store key list " + lists.front().file +
                       " has no root key pinned beside it (trust/root.pub): nothing vouches for it; pin the root "
                       "with kiln key trust --root ROOT.pub, or remove the list");
    }
    return state;
  }
  for (auto &found : lists) {
    verify_key_list(found.list, *state.anchor, found.file);
    if (state.list) {
      if (found.list.generation < state.list->generation) continue;
      if (found.list.generation == state.list->generation) check_succession(*state.list, found.list, found.file);
    }
    state.list = std::move(found.list);
    state.list_file = found.file;
  }
  return state;
}

TrustState read_trust(const store::Storage &storage) {
  std::vector<fs::path> roots;
  for (const auto &layer : storage.layers()) roots.push_back(layer->root());
  return read_trust(roots);
}

void pin_root(const fs::path &store_root, const std::string &anchor_file) {
  const PublicKey anchor = read_public_key(anchor_file);
  const fs::path dir = trust_dir(store_root);
  files::create_directories(dir);
  const files::FileLock lock(dir / "trust.lock");
  const fs::path pinned = dir / "root.pub";
  if (exists_here(pinned)) {
    const PublicKey held = read_public_key(pinned.string());
    if (held.key_id == anchor.key_id) return;
    throw UsageError("store " + store_root.string() + " already trusts root " + held.key_id + " (" + pinned.string() +
                     "), not " + anchor.key_id +
                     ": a root changes only by a rotation the old root signs (kiln key "
                     "rotate-root, then kiln key trust --key-list with the new list)");
  }
  files::write_file_atomic(pinned, public_key_text(anchor));
}

bool keep_key_list(const fs::path &store_root, const TrustState &state, const KeyList &list) {
  const fs::path dir = trust_dir(store_root);
  files::create_directories(dir);
  const files::FileLock lock(dir / "trust.lock");
  const fs::path file = dir / "keys.json";
  files::remove_dead_temps(file);
  if (auto held = read_list_file(file)) {
    verify_key_list(held->list, *state.anchor, held->file);
    check_succession(held->list, list, "offered to " + file.string());
    if (held->list.generation == list.generation) return false;
  }
  files::write_file_atomic(file, serialize_key_list(list));
  KILN_FAULT_POINT("import.after_key_list");
  return true;
}

}  // namespace kiln::bundle
