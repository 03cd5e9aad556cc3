// SIGKILL at random moments of kiln import (the signed bundle of crash_import.cpp), into the
// writable cache or --into a fresh directory, each on a fresh store so that every kill lands in a
// first import, where the writes are. After each kill and after the next import, the checks of
// the import scenarios of the fault-point suite (crash_scenarios.hpp). The seed is printed
// (KILN_RELIABILITY_SEED replays a run); KILN_RELIABILITY_IMPORT_KILLS scales it.
#include <doctest/doctest.h>

#include <map>

#include <boost/filesystem/operations.hpp>

#include "reliability/crash_scenarios.hpp"
#include "reliability/suite.hpp"
#include "store/manifest.hpp"

using namespace kiln::reliability;
namespace fs = boost::filesystem;

namespace {

// How far a killed import got, by what the target shows of the bundle's entries.
std::string landed(const fs::path &store) {
  const fs::path consumer = store / "consumers" / "crash";
  const auto manifest = kiln::store::read_manifest(consumer / "manifest.json", "crash");
  int named = 0, committed = 0;
  for (const auto &key : bundle_keys()) {
    if (fs::exists(consumer / "store" / key)) ++committed;
    for (const auto &item : manifest ? manifest->artifacts : std::map<std::string, kiln::store::ManifestRecord>{}) {
      if (item.second.content_key == key) ++named;
    }
  }
  if (named > 0) return "bundle's names recorded";
  if (committed > 0) return "entries committed, not yet named";
  boost::system::error_code error;
  for (fs::directory_iterator it(consumer / "store", error), end; !error && it != end; it.increment(error)) {
    if (it->path().filename().string().rfind(".staging-", 0) == 0) return "staging directories only";
  }
  return "nothing of the bundle written";
}

}  // namespace

TEST_SUITE("crash") {
  TEST_CASE("crash random: SIGKILLs at random moments of imports; the target stays whole and the next import finishes") {
    const long target = setting("KILN_RELIABILITY_IMPORT_KILLS", long_run() ? 500 : 50);
    kill_at_random({import_scenario(false), import_scenario(true)}, target,
                   [](std::size_t into, const Workspace &ws) {
                     return landed(into == 1 ? ws.root() / "image" / "store" : ws.store());
                   },
                   "imports");
  }
}
