// Bundles as the tests take them apart and put them together again: tar members of any type
// libarchive can express, a world of two published test plugins with their signed bundle, and
// the checks every refused import must pass (typed, naming the bundle, leaving nothing).
#pragma once

#include <archive_entry.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include "support/fixtures.hpp"

namespace kiln::test {

// One tar member as the tests write it: any type libarchive can express.
struct Member {
  std::string name;
  std::string bytes;
  unsigned mode = 0644;
  unsigned type = AE_IFREG;
  std::string link;                 // symlink target or hard link source
  std::int64_t header_size = -1;    // the size the header claims; -1: bytes.size()
};

Member plain(std::string name, std::string bytes);
// A member with no data: a symlink (AE_IFLNK, to `link`), a hard link (AE_IFREG, to `link`), a device.
Member special(std::string name, unsigned type, std::string link = "");
std::vector<Member> read_members(const fs::path &bundle);
// A pax tar of `members`, compressed with zstd unless `zstd` is false.
void write_members(const fs::path &bundle, const std::vector<Member> &members, bool zstd = true);
Member &find_member(std::vector<Member> &members, const std::string &suffix);
// A zstd-compressed tar of regular-file `members` in which the one named `bomb` is a GNU sparse
// (pax 1.0) member whose map puts its bytes `hole` bytes in: its headers declare its own size,
// yet a reader decodes `hole` zero bytes first. Written by hand: libarchive's writer refuses
// such a map.
void write_sparse_bomb(const fs::path &bundle, const std::vector<Member> &members, const std::string &bomb,
                       std::uint64_t hole);
// Nothing an import could have left: no entry, no staging directory, no manifest.
void check_nothing_in(const fs::path &root);
// Every file below root with its bytes: "unchanged" means equal maps.
std::map<std::string, std::string> file_contents(const fs::path &root);

// Two published test plugins, a key pair, and their signed bundle.
class BundleWorld {
 public:
  BundleWorld() {
    publish("example", KILN_TEST_PLUGIN_EXAMPLE, "");  // its archs: what the file holds
    publish("host_only", KILN_TEST_PLUGIN_HOST_ONLY, "none");
    auto result = run_kiln({"keygen", "-o", (dir / "vendor").string(), "--json"}, env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    key_id = nlohmann::json::parse(result.out)["key_id"];
    result = run_kiln({"export", "--consumer", "tests", "-o", bundle().string(), "--sign", secret().string(), "--json"}, env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    exported = nlohmann::json::parse(result.out);
  }

  std::map<std::string, std::string> env(const fs::path &cache = {}) const {
    return {{"KILN_CACHE_DIR", (cache.empty() ? dir / "cache" : cache).string()},
            {"KILN_DEVICE", "sm_90"},
            {"KILN_STORE_PATH", ""}};
  }
  fs::path bundle() const { return dir / "tests.kbundle"; }
  fs::path secret() const { return dir / "vendor.key"; }
  fs::path pub() const { return dir / "vendor.pub"; }
  fs::path target() const { return dir / "image" / "vendor-store"; }

  CommandResult import(const fs::path &bundle, std::vector<std::string> extra = {}) const {
    std::vector<std::string> args{"import", bundle.string(), "--into", target().string(), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kiln(args, env(dir / "other-cache"));
  }
  CommandResult import_trusted(const fs::path &bundle) const { return import(bundle, {"--trust", pub().string()}); }

  // The refusal every hostile case must give: exit 6 (integrity), naming the bundle and `why`,
  // and nothing in the target.
  void check_refused(const CommandResult &result, const fs::path &bundle, const std::string &why,
                     int exit_code = 6) const {
    CHECK_MESSAGE(result.exit_code == exit_code, result.err);
    const nlohmann::json error = nlohmann::json::parse(result.out)["error"];
    const std::string message = error["message"];
    CHECK_MESSAGE(message.find(bundle.string()) != std::string::npos, message);
    CHECK_MESSAGE(message.find(why) != std::string::npos, message);
    check_nothing_in(target());
  }

  TempDir dir;
  std::string key_id;
  nlohmann::json exported;
  std::map<std::string, std::string> keys;  // name -> content key

 private:
  void publish(const std::string &name, const char *plugin, const std::string &arch) {
    std::vector<std::string> args{"publish", "--consumer", "tests", "--name", name, "--artifact", plugin, "--json"};
    if (!arch.empty()) args.insert(args.end(), {"--arch", arch});
    const auto result = run_kiln(args, env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    keys[name] = nlohmann::json::parse(result.out)["content_key"];
  }
};

}  // namespace kiln::test
