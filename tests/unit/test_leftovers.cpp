// Temps of atomic writes left by killed writers (.manifest.json.tmp-*, bykey/.<key>.tmp-*) are
// swept; a live writer's temp never is (writers hold the file's lock, sweepers must take it).
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "files/files.hpp"
#include "store/layout.hpp"
#include "store/manifest.hpp"
#include "store/sweep.hpp"
#include "support/fixtures.hpp"
#include "support/locks_held_elsewhere.hpp"
#include "support/plugin_store.hpp"

using namespace kiln;
using kiln::test::LocksHeldElsewhere;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

const std::string some_key = "0123456789abcdef0123456789abcdef";


// What write_file_atomic leaves when its writer is killed between creating the temp and
// renaming it, `age` ago (a temp younger than files::kTempWriteBound may be a writer's at work).
fs::path leave_temp(const fs::path &file, const std::string &suffix,
                    std::chrono::seconds age = files::kTempWriteBound + std::chrono::seconds(60)) {
  fs::create_directories(file.parent_path());
  const fs::path temp = file.parent_path() / ("." + file.filename().string() + ".tmp-" + suffix);
  kiln::test::write_text(temp, "{\"schema\":1,\"consu");  // torn
  fs::last_write_time(temp, std::time(nullptr) - age.count());
  return temp;
}

}  // namespace

TEST_CASE("leftovers: manifest and bykey temps of killed writers are swept by the next publish") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const store::ConsumerLayout layout(dir / "cache", "tests");
  const fs::path manifest_temp = leave_temp(layout.manifest(), "4242-0-17");
  const fs::path bykey_temp = leave_temp(layout.bykey(some_key), "4242-1-5");
  const fs::path unrelated = layout.bykey_dir() / ".notes.tmp-1";  // not a bykey temp: not ours to judge
  kiln::test::write_text(unrelated, "");
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK_FALSE(fs::exists(manifest_temp));
  CHECK_FALSE(fs::exists(bykey_temp));
  CHECK(fs::exists(unrelated));
  CHECK(store::read_manifest(layout.manifest(), "tests")->artifacts.count("example") == 1);
}

TEST_CASE("leftovers: object-cache temps of killed builds are swept once a minute old") {
  TempDir dir;
  Runtime runtime(kiln::test::store_options(dir));
  const store::ConsumerLayout layout(dir / "cache", "tests");
  const fs::path object_temp = leave_temp(layout.objects() / "saxpy", "4242-0-3");
  const fs::path digest_temp = leave_temp(layout.objects() / ("saxpy-" + some_key + ".o.digest"), "4242-0-4");
  const fs::path fresh = leave_temp(layout.objects() / "axpy", "4243-0-1", std::chrono::seconds(0));
  const fs::path object = layout.objects() / ("saxpy-" + some_key + ".o");
  kiln::test::write_text(object, "not a temp");
  fs::last_write_time(object, std::time(nullptr) - 3600);
  kiln::test::publish_plugin(runtime, KILN_TEST_PLUGIN_EXAMPLE, "example", "sm_90");
  CHECK_FALSE(fs::exists(object_temp));
  CHECK_FALSE(fs::exists(digest_temp));
  CHECK(fs::exists(fresh));   // possibly a build at work
  CHECK(fs::exists(object));  // the cache itself is not a leftover
}

TEST_CASE("leftovers: a live writer's temps are never removed; once it dies they are") {
  TempDir dir;
  const store::ConsumerLayout layout(dir.path(), "tests");
  const fs::path manifest_temp = leave_temp(layout.manifest(), "77-0-1");
  const fs::path bykey_temp = leave_temp(layout.bykey(some_key), "77-0-2");
  LocksHeldElsewhere writer({layout.manifest_lock(), layout.build_lock(some_key)});

  const store::SweepCounts while_live = store::sweep_leftovers(layout);
  CHECK(while_live.temps == 0);
  CHECK(fs::exists(manifest_temp));
  CHECK(fs::exists(bykey_temp));

  writer.kill();
  // Just written, though no lock is held: possibly a writer at work that lost or skipped its lock.
  const fs::path fresh = leave_temp(layout.bykey(some_key), "78-0-3", std::chrono::seconds(0));
  const store::SweepCounts after = store::sweep_leftovers(layout);
  CHECK(after.temps == 2);
  CHECK_FALSE(fs::exists(manifest_temp));
  CHECK_FALSE(fs::exists(bykey_temp));
  CHECK(fs::exists(fresh));
}

TEST_CASE("leftovers: a manifest writer clears the dead temps of the manifest it holds the lock of") {
  TempDir dir;
  const store::ConsumerLayout layout(dir.path(), "tests");
  const fs::path temp = leave_temp(layout.manifest(), "99-3-4");
  store::update_manifest(layout, [](store::Manifest &manifest) {
    manifest.artifacts["x"] = {some_key, "", "plugin", store::utc_now_iso8601(), "", ""};
  });
  CHECK_FALSE(fs::exists(temp));
  CHECK(store::read_manifest(layout.manifest(), "tests")->artifacts.count("x") == 1);
}
