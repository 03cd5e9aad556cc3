#include "builder/tool_digests.hpp"

#include <chrono>
#include <map>
#include <mutex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "store/digest.hpp"
#include "store/file_identity.hpp"
#include "store/files.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;

constexpr int kToolMemoFormat = 1;
constexpr std::int64_t kToolSettledNs = 2'000'000'000;

struct RememberedTool {
  store::FileIdentity identity;
  std::string digest;
};

std::mutex tool_memo_guard;
std::map<std::string, RememberedTool> remembered_tools;  // by real path

json tool_identity_json(const store::FileIdentity &id) {
  return {{"device", id.device}, {"inode", id.inode}, {"size", id.size}, {"mtime_ns", id.mtime_ns}, {"ctime_ns", id.ctime_ns}};
}

bool same_tool_identity(const json &entry, const store::FileIdentity &id) {
  return entry.is_object() && entry.value("device", std::uint64_t{0}) == id.device &&
         entry.value("inode", std::uint64_t{0}) == id.inode && entry.value("size", std::uint64_t{0}) == id.size &&
         entry.value("mtime_ns", std::int64_t{0}) == id.mtime_ns && entry.value("ctime_ns", std::int64_t{0}) == id.ctime_ns;
}

json read_tool_memo(const fs::path &file) {
  struct Unusable {};
  try {
    json memo = support::parse_json(store::read_file(file, store::FileOrigin::store, store::kMaxJsonFileBytes),
                                    [](const std::string &) { throw Unusable{}; });
    if (memo.is_object() && memo.value("format", 0) == kToolMemoFormat && memo.contains("tools") && memo["tools"].is_object()) {
      return memo["tools"];
    }
  } catch (const Error &) {
  } catch (const Unusable &) {
  } catch (const json::exception &) {
  }
  return json::object();  // missing, unreadable or malformed: only a cache
}

bool settled_long_enough(const store::FileIdentity &id) {
  const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch()).count();
  return now - std::max(id.mtime_ns, id.ctime_ns) >= kToolSettledNs;
}

}  // namespace

std::string tool_digest(const fs::path &tool, const ToolDigestMemo &memo) {
  boost::system::error_code error;
  const fs::path real = fs::canonical(tool, error);
  const auto identity = error ? std::nullopt : store::identify(real);
  const auto hash = [&] {
    store::Hasher hasher;
    hasher.add_file(tool);  // as keys.cpp always did: the same key with or without the memo
    return hasher.hex();
  };
  if (!identity) return hash();  // the hash says what is wrong with the file

  std::lock_guard<std::mutex> lock(tool_memo_guard);
  const std::string path = real.string();
  if (const auto known = remembered_tools.find(path); known != remembered_tools.end() && known->second.identity == *identity) {
    return known->second.digest;
  }
  json tools = memo.file.empty() ? json::object() : read_tool_memo(memo.file);
  if (const auto entry = tools.find(path); entry != tools.end() && same_tool_identity(*entry, *identity) &&
                                           entry->contains("digest") && (*entry)["digest"].is_string()) {
    const std::string digest = (*entry)["digest"].get<std::string>();
    remembered_tools[path] = {*identity, digest};
    return digest;
  }
  const std::string digest = hash();
  if (!settled_long_enough(*identity)) return digest;
  remembered_tools[path] = {*identity, digest};
  if (memo.write && !memo.file.empty()) {
    json entry = tool_identity_json(*identity);
    entry["digest"] = digest;
    tools[path] = std::move(entry);
    for (auto it = tools.begin(); it != tools.end();) {  // drop what no longer describes a file there
      const auto now = store::identify(fs::path(it.key()));
      it = (!now || !same_tool_identity(*it, *now)) ? tools.erase(it) : std::next(it);
    }
    try {
      store::create_directories(memo.file.parent_path());
      store::write_file_atomic(memo.file, support::dump_json(json{{"format", kToolMemoFormat}, {"tools", tools}}, 1) + "\n");
    } catch (const Error &) {
      // Only a cache: a read-only store still builds; the next hit hashes again.
    }
  }
  return digest;
}

void reset_tool_digest_memo_for_tests() {
  std::lock_guard<std::mutex> lock(tool_memo_guard);
  remembered_tools.clear();
}

}  // namespace kiln::builder
