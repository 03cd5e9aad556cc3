// Crash injection into builds that a remote cache serves or that upload to one (crash_remote.cpp),
// against the test servers that ctest starts for the entry reliability_remote (fixture
// remote_servers): each scenario killed at each fault point at every pass, then SIGKILLs at
// random moments (mid-download and mid-upload included, where no fault point is). Skipped
// visibly without the servers.
#include <doctest/doctest.h>

#include "reliability/crash_scenarios.hpp"
#include "reliability/suite.hpp"
#include "support/preconditions.hpp"
#include "support/remote_servers.hpp"

using namespace kiln::reliability;

TEST_SUITE("crash_remote") {
  TEST_CASE("crash remote: builds served by a remote and builds uploading to one are killed at each fault point, at "
            "every pass; the cache stays whole, the remote never shows a torn entry, the next build finishes" *
            kiln::test::skip_if(kiln::test::no_remote_servers)) {
    kill_at_fault_points({remote_fetch_scenario("http"), remote_upload_scenario()}, "remote fetch and upload");
  }

  TEST_CASE("crash remote: SIGKILLs at random moments of remote fetches (http, redis) and uploads" *
            kiln::test::skip_if(kiln::test::no_remote_servers)) {
    const long target = setting("KILN_RELIABILITY_REMOTE_KILLS", long_run() ? 300 : 40);
    kill_at_random({remote_fetch_scenario("http"), remote_fetch_scenario("redis"), remote_upload_scenario()}, target,
                   [](std::size_t, const Workspace &ws) { return what_landed(ws, {"crash", "built"}); },
                   "remote fetches and uploads");
  }
}
