// What a bundle may cost the machine that imports it: work in proportion to its entries.
#include <doctest/doctest.h>

#include <cstring>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/runtime.hpp>
#include <kiln/stamp.h>
#include <kiln/version.h>

#include "device/identity_json.hpp"
#include "store/digest.hpp"
#include "store/local_store.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"

using kiln::test::run_shell;
using nlohmann::json;
namespace fs = boost::filesystem;

namespace {

std::optional<std::string> no_strace() {
  if (run_shell("command -v strace").exit_code != 0) {
    return std::string("strace is not installed (Debian: strace; scripts/install-deps installs it)");
  }
  if (run_shell("strace -f -o /dev/null true").exit_code != 0) {
    return std::string("strace cannot trace a child here (ptrace not permitted)");
  }
  return std::nullopt;
}

// Bytes standing in for a plugin: random, with a build stamp naming `key` (what an import
// checks of a plugin file; abi/kiln/stamp.h).
std::string stamped_plugin(const std::string &key, std::mt19937_64 &random) {
  std::string bytes(64, '\0');
  for (auto &c : bytes) c = static_cast<char>(random());
  kiln_build_stamp stamp{};
  std::memcpy(stamp.magic, KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE);
  stamp.struct_size = sizeof stamp;
  stamp.abi_version = KILN_ABI_VERSION;
  std::memcpy(stamp.content_key, key.data(), KILN_STAMP_KEY_SIZE);
  return bytes.append(reinterpret_cast<const char *>(&stamp), sizeof stamp);
}

// An unsigned bundle of `entries` tiny entries of consumer "many", each named, written through
// the store's own staging and commit into `source` and exported from it.
fs::path many_entry_bundle(const fs::path &source, int entries) {
  const kiln::store::LocalStore store({source, true, "test"});
  std::mt19937_64 random(11);
  const std::string identity = kiln::device::identity_file_text(kiln::ArtifactIdentity{});
  kiln::store::Manifest named;
  for (int i = 0; i < entries; ++i) {
    char key[33];
    std::snprintf(key, sizeof key, "%016llx%016llx", static_cast<unsigned long long>(random()),
                  static_cast<unsigned long long>(random()));
    const std::string bytes = stamped_plugin(key, random);
    kiln::store::Staging staging = store.stage("many", {});
    staging.write("libsolver.so", bytes, 0755);
    staging.write_records({key, "plugin", "libsolver.so", kiln::store::digest_hex(bytes), bytes.size(),
                           kiln::store::utc_now_iso8601(), {}, {}},
                          identity);
    store.commit_entry(std::move(staging), {});
    named.artifacts["n" + std::to_string(i)] = {key, "", "plugin", kiln::store::utc_now_iso8601(), ""};
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

}  // namespace

TEST_SUITE("bundle") {

TEST_CASE("bundle: an import's work grows with its entries, not their square: each staging lock is opened a few times" *
          kiln::test::skip_if(no_strace)) {
  // Every entry of an import stays staged (and its staging lock held) until the whole bundle
  // verified; sweeping the consumer's leftovers before each new staging directory would open
  // every earlier one's lock again: n(n-1)/2 opens, 11,175 for these 150 entries.
  constexpr int kEntries = 150;
  kiln::test::TempDir dir;
  const fs::path bundle = many_entry_bundle(dir / "source", kEntries);
  const fs::path trace = dir / "trace";
  const auto result = run_shell("env KILN_CACHE_DIR=" + (dir / "cache").string() +
                                " KILN_STORE_PATH= KILN_DEVICE=sm_90"
                                " ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\""
                                " strace -f -e trace=open,openat -o " +
                                trace.string() + " " + kiln::test::kiln_cli_command() + " import " + bundle.string() +
                                " --allow-unsigned --json");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(json::parse(result.out)["entries"].size() == static_cast<std::size_t>(kEntries));
  std::istringstream lines(kiln::test::read_text(trace));
  int lock_opens = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find(".staging.lock") != std::string::npos) ++lock_opens;
  }
  MESSAGE(lock_opens << " opens of staging locks for an import of " << kEntries << " entries");
  CHECK(lock_opens >= kEntries);  // each entry's own
  CHECK(lock_opens <= 3 * kEntries);
}

}  // TEST_SUITE
