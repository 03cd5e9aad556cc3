// Writers on a full disk (full_disk.hpp): publish, a build through the stand-in nvcc (the ABI
// headers' copy, the compiles, the object cache, the link), a bundle import and a build a remote
// serves, each run with its store on a small tmpfs filled to several levels found by measuring
// what the command writes. At each: the command succeeds or fails with an I/O error naming the
// file and "No space left on device"; the store is whole and holds nothing the failed writer
// left; kiln verify reports nothing but leftovers and unnamed entries; the next run succeeds.
#include <doctest/doctest.h>

#include "reliability/crash_scenarios.hpp"
#include "reliability/full_disk.hpp"
#include "support/fixtures.hpp"
#include "support/preconditions.hpp"
#include "support/remote_servers.hpp"

using namespace kiln::reliability;
using kiln::test::TempDir;

namespace {

Scenario publish_scenario() {
  Scenario s;
  s.title = "publish (a new name beside a named one)";
  s.setup = [](const Workspace &ws) { setup_op(ws, ws.publish("other", "sm_90")); };
  s.op = [](const Workspace &ws) { return ws.publish("plug"); };
  s.names = {{"crash", "plug"}, {"crash", "other"}};
  return s;
}

Scenario build_scenario() {
  Scenario s;
  s.title = "build (stand-in nvcc; the first, so it writes the ABI headers' copy)";
  s.setup = [](const Workspace &ws) { setup_op(ws, ws.publish("plug")); };
  s.op = [](const Workspace &ws) { return ws.build(Backend::fake_nvcc, "built", 0); };
  s.names = {{"crash", "built"}, {"crash", "plug"}};
  return s;
}

}  // namespace

TEST_SUITE("full_disk") {
  TEST_CASE("full disk: publish, build and import at several fill levels fail cleanly or succeed; nothing is left "
            "behind and the next run succeeds" * kiln::test::skip_if(no_small_disk)) {
    TempDir dir;
    fill_at_levels(publish_scenario(), dir / "publish");
    fill_at_levels(build_scenario(), dir / "build");
    Scenario import = import_scenario(false);
    import.title = "import (a signed bundle over an older version of a name)";
    fill_at_levels(import, dir / "import");
  }
}

TEST_SUITE("full_disk_remote") {
  TEST_CASE("full disk: a build the http remote serves, at several fill levels" *
            kiln::test::skip_if(no_small_disk) * kiln::test::skip_if(kiln::test::no_remote_servers)) {
    TempDir dir;
    Scenario fetch = remote_fetch_scenario("http");
    fetch.title = "remote fetch (a build the http remote serves)";
    fill_at_levels(fetch, dir / "remote");
  }
}
