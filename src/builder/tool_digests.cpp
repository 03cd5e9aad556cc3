#include "builder/tool_digests.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/file_facts.hpp"
#include "store/digest.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

constexpr std::int64_t kToolSettledNs = 2'000'000'000;

std::mutex tool_memo_guard;
std::map<std::string, FileKey> remembered_keys;         // by real path: the identity digested
std::map<std::string, std::string> remembered_digests;  // by real path

bool settled_long_enough(const store::FileIdentity &id) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  return now - std::max(id.mtime_ns, id.ctime_ns) >= kToolSettledNs;
}

}  // namespace

std::string tool_digest(const fs::path &tool, const ToolDigestMemo &memo) {
  const auto hash = [&] {
    store::Hasher hasher;
    hasher.add_file(tool);  // as keys.cpp always did: the same key with or without the memo
    return hasher.hex();
  };
  FileKey key;
  try {
    key = file_key_of(tool.string());
  } catch (const Error &) {
    return hash();  // the hash says what is wrong with the file
  }

  std::lock_guard<std::mutex> lock(tool_memo_guard);
  if (const auto known = remembered_keys.find(key.real_path); known != remembered_keys.end() && known->second == key) {
    return remembered_digests.at(key.real_path);
  }
  FileFacts facts(memo.file);
  if (const auto digest = facts.get(key, "digest")) {
    remembered_keys[key.real_path] = key;
    remembered_digests[key.real_path] = *digest;
    return *digest;
  }
  const std::string digest = hash();
  if (!settled_long_enough(key.identity)) return digest;
  remembered_keys[key.real_path] = key;
  remembered_digests[key.real_path] = digest;
  if (memo.write) {
    facts.put(key, "digest", digest);
    facts.save();
  }
  return digest;
}

void reset_tool_digest_memo_for_tests() {
  std::lock_guard<std::mutex> lock(tool_memo_guard);
  remembered_keys.clear();
  remembered_digests.clear();
}

}  // namespace kiln::builder
