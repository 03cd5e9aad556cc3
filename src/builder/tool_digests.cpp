#include "builder/tool_digests.hpp"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/file_facts.hpp"
#include "files/digest.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

constexpr std::int64_t kToolSettledNs = 2'000'000'000;

std::mutex tool_memo_guard;
struct RememberedTool {
  FileKey key;  // the file as it was digested
  std::string digest;
};
std::map<std::string, RememberedTool> remembered_tools;  // by real path

bool settled_long_enough(const files::FileIdentity &id) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  return now - std::max(id.mtime_ns, id.ctime_ns) >= kToolSettledNs;
}

}  // namespace

std::string tool_digest(const fs::path &tool, const ToolDigestMemo &memo) {
  const auto hash = [&] {
    files::Hasher hasher;
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
  const auto known = remembered_tools.find(key.real_path);
  if (known != remembered_tools.end() && known->second.key == key) {
    return known->second.digest;
  }
  FileFacts facts(memo.file);
  if (const auto digest = facts.get(key, "digest")) {
    remembered_tools[key.real_path] = {key, *digest};
    return *digest;
  }
  const std::string digest = hash();
  if (!settled_long_enough(key.identity)) return digest;
  remembered_tools[key.real_path] = {key, digest};
  if (memo.write) {
    facts.put(key, "digest", digest);
    facts.save();
  }
  return digest;
}

void reset_tool_digest_memo_for_tests() {
  std::lock_guard<std::mutex> lock(tool_memo_guard);
  remembered_tools.clear();
}

}  // namespace kiln::builder
