// What a bundle may cost the machine that imports it: work in proportion to its entries, no
// more disk than its index declares and the target has free, and only the documented format
// (zstd over tar) is read at all.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/errors.hpp>
#include <kiln/runtime.hpp>
#include <kiln/stamp.h>
#include <kiln/version.h>

#include "artifact/identity_json.hpp"
#include "files/digest.hpp"
#include "store/local_store.hpp"
#include "store/manifest.hpp"
#include "support/bundle_world.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"
#include "support/test_plugins.hpp"

using kiln::test::BundleWorld;
using kiln::test::check_nothing_in;
using kiln::test::Member;
using kiln::test::read_members;
using kiln::test::run_shell;
using kiln::test::write_members;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

// Bytes this process handed to write(2) and its kin so far (/proc/self/io "wchar").
std::uint64_t bytes_written_by_process() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  FAIL("/proc/self/io has no wchar line");
  return 0;
}

std::optional<std::string> no_private_tmpfs() {
#if defined(__SANITIZE_ADDRESS__)
  return std::string("an ASan build's runtime cannot start in a user namespace with a fresh mount");
#else
  if (run_shell("unshare -r -m sh -c 'mount -t tmpfs -o size=1m none /mnt'").exit_code != 0) {
    return std::string("unshare -r -m with a tmpfs mount is not permitted here, so a small file system cannot be staged");
  }
  return std::nullopt;
#endif
}

std::optional<std::string> no_strace() {
  if (run_shell("command -v strace").exit_code != 0) {
    return std::string("strace is not installed (Debian: strace; scripts/install-deps installs it)");
  }
  if (run_shell("strace -f -o /dev/null true").exit_code != 0) {
    return std::string("strace cannot trace a child here (ptrace not permitted)");
  }
  return std::nullopt;
}

// An unsigned bundle of `entries` tiny entries of consumer "many", each named, written through
// the store's own staging and commit into `source` and exported from it.
fs::path many_entry_bundle(const fs::path &source, int entries) {
  const kiln::store::LocalStore store({source, true, "test"});
  std::mt19937_64 random(11);
  const std::string identity = kiln::artifact::identity_file_text(kiln::ArtifactIdentity{});
  kiln::store::Manifest named;
  for (int i = 0; i < entries; ++i) {
    char key[33];
    std::snprintf(key, sizeof key, "%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    const std::string bytes = kiln::test::host_only_plugin_stamped(key);
    kiln::store::Staging staging = store.stage("many", {});
    staging.write("libsolver.so", bytes, 0755);
    staging.write_records({key, "plugin", "libsolver.so", kiln::files::digest_hex(bytes), bytes.size(),
                           kiln::store::utc_now_iso8601(), {}, {}},
                          identity);
    store.commit_entry(std::move(staging), {});
    named.artifacts["n" + std::to_string(i)] = {key, "", "plugin", kiln::store::utc_now_iso8601(), "", ""};
  }
  kiln::store::update_manifest(store.layout("many"), [&](kiln::store::Manifest &manifest) { manifest.artifacts = named.artifacts; });
  kiln::RuntimeOptions options;
  options.cache_dir = source.string();
  options.declared_device = "sm_90";
  kiln::ExportRequest request;
  request.consumer = "many";
  request.output = (source.parent_path() / "many.kbundle").string();
  kiln::Runtime(options).export_bundle(request);
  return request.output;
}

std::uint64_t declared_bytes(const json &index) {
  std::uint64_t total = 0;
  for (const auto &entry : index["entries"]) {
    for (const auto &file : entry["files"]) total += file["size"].get<std::uint64_t>();
  }
  return total;
}

}  // namespace

TEST_SUITE("bundle") {

// The lines of an strace (-e trace=`calls`) of `kiln import` of `bundle` into a fresh cache under `dir`.
std::vector<std::string> traced_import(const fs::path &dir, const fs::path &bundle, const std::string &calls,
                                       std::size_t entries) {
  const fs::path trace = dir / ("trace-" + calls.substr(0, calls.find(',')));
  const auto result = run_shell("env KILN_CACHE_DIR=" + (dir / ("cache-" + trace.filename().string())).string() +
                                " KILN_STORE_PATH= KILN_DEVICE=sm_90"
                                " ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\""
                                " strace -f -e trace=" + calls + " -o " +
                                trace.string() + " " + kiln::test::kiln_cli_command() + " import " + bundle.string() +
                                " --allow-unsigned --json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["entries"].size() == entries);
  std::istringstream text(kiln::test::read_text(trace));
  std::vector<std::string> lines;
  for (std::string line; std::getline(text, line);) lines.push_back(line);
  return lines;
}

TEST_CASE("bundle: an import's work grows with its entries, not their square: each staging lock is opened a few times" *
          kiln::test::skip_if(no_strace)) {
  // Every entry of an import stays staged (and its staging lock held) until the whole bundle
  // verified; sweeping the consumer's leftovers before each new staging directory would open
  // every earlier one's lock again: n(n-1)/2 opens, 11,175 for these 150 entries.
  constexpr int kEntries = 150;
  kiln::test::TempDir dir;
  const fs::path bundle = many_entry_bundle(dir / "source", kEntries);
  int lock_opens = 0;
  for (const auto &line : traced_import(dir.path(), bundle, "open,openat", kEntries)) {
    if (line.find(".staging.lock") != std::string::npos) ++lock_opens;
  }
  MESSAGE(lock_opens << " opens of staging locks for an import of " << kEntries << " entries");
  CHECK(lock_opens >= kEntries);  // each entry's own
  CHECK(lock_opens <= 3 * kEntries);
}

TEST_CASE("bundle: an import of many entries flushes the file system twice, not every staged file" *
          kiln::test::skip_if(no_strace)) {
  // One syncfs before the renames (every staged file durable), one after (the renames durable);
  // the fsyncs left are the manifest's write, not one per entry.
  constexpr int kEntries = 150;
  kiln::test::TempDir dir;
  const fs::path bundle = many_entry_bundle(dir / "source", kEntries);
  int syncfs_calls = 0, fsync_calls = 0;
  for (const auto &line : traced_import(dir.path(), bundle, "fsync,fdatasync,syncfs", kEntries)) {
    if (line.find("syncfs(") != std::string::npos) ++syncfs_calls;
    if (line.find("fsync(") != std::string::npos || line.find("fdatasync(") != std::string::npos) ++fsync_calls;
  }
  MESSAGE(syncfs_calls << " syncfs and " << fsync_calls << " fsync calls for an import of " << kEntries << " entries");
  CHECK(syncfs_calls == 2);
  CHECK(fsync_calls < 10);
}

TEST_CASE("bundle: a sparse member that decodes past its declared size is refused before a byte past it is written") {
  BundleWorld world;
  std::vector<Member> members = read_members(world.bundle());
  const Member &bomb = members.back();  // keeps the signed index: an attacker cannot re-sign
  const fs::path hostile = world.dir / "bomb.kbundle";
  constexpr std::uint64_t kHole = 256ull << 20;
  kiln::test::write_sparse_bomb(hostile, members, bomb.name, kHole);
  CHECK(fs::file_size(hostile) < kHole / 256);  // small on disk (the plugin, compressed), 256 MiB more once decoded

  kiln::RuntimeOptions options;
  options.cache_dir = (world.dir / "other-cache").string();
  options.declared_device = "sm_90";
  kiln::Runtime runtime(options);
  kiln::ImportRequest request;
  request.bundle = hostile.string();
  request.into = world.target().string();
  request.trusted_keys = {world.pub().string()};
  const std::uint64_t before = bytes_written_by_process();
  std::string message;
  try {
    runtime.import_bundle(request);
  } catch (const kiln::IntegrityError &error) {
    message = error.what();
  }
  const std::uint64_t written = bytes_written_by_process() - before;
  CHECK_MESSAGE(message.find(bomb.name) != std::string::npos, message);
  CHECK_MESSAGE(message.find("decodes to more than the " + std::to_string(bomb.bytes.size()) + " bytes its index declares") !=
                    std::string::npos,
                message);
  // Everything the index declares may be written, and no more (the records and messages
  // besides are small): nothing of the hole.
  const std::uint64_t declared = declared_bytes(json::parse(members.front().bytes));
  CHECK_MESSAGE(written <= declared + (1u << 20), written << " bytes written for " << declared << " declared");
  check_nothing_in(world.target());
}

TEST_CASE("bundle: a plain tar (not zstd-compressed) is refused, naming the format expected") {
  BundleWorld world;
  const fs::path plain = world.dir / "plain.tar";
  write_members(plain, read_members(world.bundle()), /*zstd=*/false);
  world.check_refused(world.import_trusted(plain), plain, "is not compressed with zstd (none): a kiln bundle is a zstd-compressed tar");
}

TEST_CASE("bundle: a bundle declaring more bytes than the target has free is refused before extracting any" *
          kiln::test::skip_if(no_private_tmpfs)) {
  BundleWorld world;
  // Unsigned, its index rewritten to declare a 16 MiB artifact of zeros (a few KiB compressed).
  std::vector<Member> members = read_members(world.bundle());
  members.erase(members.begin() + 1);  // the signature
  json index = json::parse(members.front().bytes);
  Member &artifact = members.back();
  artifact.bytes.assign(16u << 20, '\0');
  const std::string file_name = fs::path(artifact.name).filename().string();
  for (auto &entry : index["entries"]) {
    for (auto &file : entry["files"]) {
      if (file["name"] == file_name && artifact.name.find(entry["content_key"].get<std::string>()) != std::string::npos) {
        file["size"] = artifact.bytes.size();
      }
    }
  }
  members.front().bytes = index.dump(1) + "\n";
  const fs::path large = world.dir / "large.kbundle";
  write_members(large, members);
  CHECK(fs::file_size(large) < (1u << 20));

  // The target is a 4 MiB tmpfs in a private mount namespace.
  const fs::path target = world.dir / "small-disk";
  fs::create_directories(target);
  const auto result = run_shell("unshare -r -m sh -c 'mount -t tmpfs -o size=4m none " + target.string() +
                                " && exec env KILN_CACHE_DIR=" + (world.dir / "other-cache").string() +
                                " KILN_STORE_PATH= KILN_DEVICE=sm_90 " + kiln::test::kiln_cli_command() + " import " +
                                large.string() + " --allow-unsigned --into " + (target / "store").string() + " --json'");
  CHECK_MESSAGE(result.exit_code == 1, result.err);
  const std::string error = json::parse(result.out)["error"]["message"];
  CHECK_MESSAGE(error.find(large.string()) != std::string::npos, error);
  CHECK_MESSAGE(error.find("bytes free in") != std::string::npos, error);
  CHECK_MESSAGE(error.find("nothing was imported") != std::string::npos, error);
}

}  // TEST_SUITE
