#include "store/entry_differences.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace kiln::store {

namespace fs = boost::filesystem;
namespace {

// file name -> (digest, size): the artifact file and, for images, each image.
std::map<std::string, std::pair<std::string, std::uint64_t>> files_of(const EntryMeta &meta) {
  std::map<std::string, std::pair<std::string, std::uint64_t>> files;
  files[meta.file] = {meta.digest, meta.size};
  for (const auto &image : meta.images) files[image.file] = {image.digest, image.size};
  return files;
}

// The offset of the first byte where the two files differ (the shorter one's size when one is a
// prefix of the other); nullopt when either cannot be read.
std::optional<std::uint64_t> first_difference(const fs::path &a, const fs::path &b) {
  std::ifstream left(a.string(), std::ios::binary), right(b.string(), std::ios::binary);
  if (!left || !right) return std::nullopt;
  std::vector<char> x(1 << 16), y(1 << 16);
  std::uint64_t offset = 0;
  for (;;) {
    left.read(x.data(), static_cast<std::streamsize>(x.size()));
    right.read(y.data(), static_cast<std::streamsize>(y.size()));
    const auto got_left = static_cast<std::size_t>(left.gcount()), got_right = static_cast<std::size_t>(right.gcount());
    const std::size_t both = std::min(got_left, got_right);
    for (std::size_t i = 0; i < both; ++i) {
      if (x[i] != y[i]) return offset + i;
    }
    if (got_left != got_right || got_left == 0) return offset + both;
    offset += both;
    if (left.bad() || right.bad()) return std::nullopt;
  }
}

}  // namespace

std::string describe_entry_differences(const fs::path &old_dir, const EntryMeta &old_meta, const fs::path &new_dir,
                                       const EntryMeta &new_meta) {
  const auto before = files_of(old_meta), after = files_of(new_meta);
  std::string text;
  const auto clause = [&](const std::string &part) { text += (text.empty() ? "" : "; ") + part; };
  for (const auto &[name, was] : before) {
    if (after.count(name) == 0) clause(name + " is gone");
  }
  for (const auto &[name, now] : after) {
    const auto was = before.find(name);
    if (was == before.end()) {
      clause(name + " is new");
      continue;
    }
    if (was->second.first == now.first) continue;
    std::string part = name + ": " +
                       (was->second.second == now.second ? std::to_string(now.second)
                                                         : std::to_string(was->second.second) + " -> " + std::to_string(now.second)) +
                       " bytes";
    if (const auto at = first_difference(old_dir / name, new_dir / name)) part += ", first difference at byte " + std::to_string(*at);
    clause(part);
  }
  return text;
}

}  // namespace kiln::store
