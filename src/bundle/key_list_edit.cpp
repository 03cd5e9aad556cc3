// kiln/keys.hpp's edits: each reads the list, checks it is consistent and that the given root
// signs it, makes the change, and writes the next generation signed by the root.
#include <sys/stat.h>

#include <algorithm>
#include <ctime>

#include <boost/filesystem/operations.hpp>
#include <boost/filesystem/path.hpp>

#include <kiln/errors.hpp>
#include <kiln/keys.hpp>

#include "bundle/hash.hpp"
#include "bundle/key_list.hpp"
#include "bundle/release_versions.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "support/typed_errors.hpp"
#include "support/utc_time.hpp"

namespace kiln {
namespace {

using bundle::KeyList;

std::string now_utc() { return support::format_utc_time(std::time(nullptr)); }

KeyListInfo info_of(const KeyList &list, const std::string &file) {
  KeyListInfo info;
  info.file = file;
  info.generation = list.generation;
  info.created = list.created;
  info.expires = list.expires;
  info.expired = now_utc() > list.expires;
  for (const auto &root : list.roots) info.roots.push_back(root.key_id);
  const std::string now = now_utc();
  for (const auto &key : list.keys) {
    const char *status = key.revoked ? "revoked" : now > key.expires ? "expired" : "valid";
    info.keys.push_back({key.key_id, key.name, key.roles, key.consumers, key.expires, status, key.revoked_at,
                         key.revoked_all, key.revoke_reason});
  }
  return info;
}

KeyList read_consistent(const std::string &file) {
  const std::string text = files::read_file(file, files::FileOrigin::input, bundle::kMaxKeyListBytes);
  KeyList list = bundle::parse_key_list(text, file);
  bundle::verify_key_list_self(list, file);
  return list;
}

// The next generation, signed by `root` and written over `file` atomically.
KeyListInfo write_next(KeyList list, const bundle::SecretKey &root, const KeyListEdit &edit) {
  list.generation += 1;
  list.expires = bundle::expiry_of(edit.expires, std::time(nullptr));
  bundle::sign_key_list(list, root);
  files::write_file_atomic(boost::filesystem::absolute(edit.file), bundle::serialize_key_list(list));
  return info_of(list, edit.file);
}

void load_root(bundle::SecretKey &root, const KeyListEdit &edit) {
  if (edit.file.empty()) throw UsageError("no key list named: pass the FILE to edit");
  if (edit.root_key.empty()) throw UsageError("no root key given: pass --root PATH.key (the key list's root)");
  bundle::load_secret(root, edit.root_key);
}

bundle::PublicKey public_half(const bundle::SecretKey &key) {
  // The key's own public half, as its PATH.pub beside it holds it (keygen writes both).
  const std::string pub = boost::filesystem::path(key.file).replace_extension(".pub").string();
  bundle::PublicKey public_key = bundle::read_public_key(pub);
  if (public_key.key_id != key.key_id) {
    throw UsageError(pub + " is not the public half of " + key.file + ": keep the pair kiln keygen wrote together");
  }
  return public_key;
}

std::string expiry_checked(const std::string &text) { return bundle::expiry_of(text, std::time(nullptr)); }

}  // namespace

KeyListInfo create_key_list(const KeyListEdit &edit) try {
  bundle::SecretKey root;
  load_root(root, edit);
  struct stat st {};
  if (::lstat(edit.file.c_str(), &st) == 0) {
    throw UsageError(edit.file + " already exists: edit it with kiln key add / revoke / rotate-root");
  }
  const bundle::PublicKey root_public = public_half(root);
  KeyList list;
  list.roots.push_back({root.key_id, bundle::to_hex(root_public.key, sizeof root_public.key), 1, ""});
  return write_next(list, root, edit);
} catch (...) {
  support::rethrow_typed("creating the key list " + edit.file);
}

KeyListInfo add_key(const AddKeyRequest &request) try {
  bundle::SecretKey root;
  load_root(root, request.edit);
  KeyList list = read_consistent(request.edit.file);
  const bundle::PublicKey key = bundle::read_public_key(request.public_key);
  if (request.roles.empty())
    throw UsageError("no role given for key " + key.key_id + ": pass --role build and/or --role release");
  bundle::ListedKey listed;
  listed.key_id = key.key_id;
  listed.public_hex = bundle::to_hex(key.key, sizeof key.key);
  listed.name = request.name.empty() ? boost::filesystem::path(request.public_key).stem().string() : request.name;
  for (const auto &role : request.roles) {
    if (role != bundle::kRoleBuild && role != bundle::kRoleRelease) {
      throw UsageError("role '" + role + "' is neither build (remote cache entries) nor release (bundles)");
    }
    if (std::find(listed.roles.begin(), listed.roles.end(), role) == listed.roles.end()) listed.roles.push_back(role);
  }
  listed.consumers = request.consumers.empty() ? std::vector<std::string>{"*"} : request.consumers;
  for (const auto &consumer : listed.consumers) {
    if (consumer != "*") store::validate_name("consumer", consumer);
  }
  listed.expires = expiry_checked(request.key_expires);
  for (const auto &root_key : list.roots) {
    if (root_key.key_id == key.key_id)
      throw UsageError("key " + key.key_id +
                       " is a root of this list: a root signs key lists only; add a separate signing key");
  }
  auto existing =
      std::find_if(list.keys.begin(), list.keys.end(), [&](const auto &k) { return k.key_id == key.key_id; });
  if (existing != list.keys.end()) {
    if (existing->revoked)
      throw UsageError("key " + key.key_id + " is revoked in " + request.edit.file +
                       ": a revoked key stays revoked; make a new key pair with kiln keygen");
    *existing = listed;
  } else {
    list.keys.push_back(listed);
  }
  return write_next(std::move(list), root, request.edit);
} catch (...) {
  support::rethrow_typed("adding a key to " + request.edit.file);
}

KeyListInfo revoke_key(const RevokeKeyRequest &request) try {
  bundle::SecretKey root;
  load_root(root, request.edit);
  KeyList list = read_consistent(request.edit.file);
  auto key =
      std::find_if(list.keys.begin(), list.keys.end(), [&](const auto &k) { return k.key_id == request.key_id; });
  if (key == list.keys.end())
    throw NotFoundError("key " + request.key_id + " is not in " + request.edit.file + ": kiln key list " +
                        request.edit.file + " shows its keys");
  std::string at = now_utc();
  if (!request.at.empty()) {
    const auto parsed = support::parse_utc_time(request.at);
    if (!parsed) throw UsageError("--at '" + request.at + "' is not a UTC time of the form 2026-01-31T23:59:59Z");
    at = support::format_utc_time(*parsed);
  }
  key->revoked = true;
  key->revoked_all = key->revoked_all || request.all;  // a revocation only ever widens
  if (!key->revoked_all) key->revoked_at = key->revoked_at.empty() ? at : std::min(key->revoked_at, at);
  if (key->revoked_all) key->revoked_at.clear();
  key->revoke_reason = request.reason.empty() ? "revoked " + now_utc() : request.reason;
  return write_next(std::move(list), root, request.edit);
} catch (...) {
  support::rethrow_typed("revoking key " + request.key_id + " in " + request.edit.file);
}

KeyListInfo rotate_root(const KeyListEdit &edit, const std::string &new_root_key) try {
  bundle::SecretKey old_root;
  load_root(old_root, edit);
  KeyList list = read_consistent(edit.file);
  if (old_root.key_id != list.root().key_id) {
    throw UsageError("key " + old_root.key_id + " is not the current root " + list.root().key_id + " of " + edit.file +
                     ": only the current root can hand over");
  }
  bundle::SecretKey new_root;
  bundle::load_secret(new_root, new_root_key);
  for (const auto &root : list.roots) {
    if (root.key_id == new_root.key_id)
      throw UsageError("key " + new_root.key_id +
                       " was already a root of this list: make a new key pair for the new root");
  }
  if (list.find(new_root.key_id) != nullptr)
    throw UsageError("key " + new_root.key_id +
                     " is a signing key of this list: a root should sign key lists only; make a new key pair");
  const bundle::PublicKey new_public = public_half(new_root);
  bundle::RootKey next{new_root.key_id, bundle::to_hex(new_public.key, sizeof new_public.key), list.generation + 1, ""};
  const std::string endorsement = old_root.sign(bundle::endorsement_text(next));
  next.endorsement = bundle::to_hex(reinterpret_cast<const unsigned char *>(endorsement.data()), endorsement.size());
  list.roots.push_back(next);
  return write_next(std::move(list), new_root, edit);
} catch (...) {
  support::rethrow_typed("rotating the root of " + edit.file);
}

KeyListInfo read_key_list(const std::string &file) try { return info_of(read_consistent(file), file); } catch (...) {
  support::rethrow_typed("reading the key list " + file);
}

namespace bundle {
KeyListInfo key_list_info(const KeyList &list, const std::string &file) { return info_of(list, file); }
}  // namespace bundle

}  // namespace kiln
