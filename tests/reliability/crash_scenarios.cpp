// The checks every crash scenario runs after a kill and after the next run (crash_scenarios.hpp).
#include "reliability/crash_scenarios.hpp"

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "store/manifest.hpp"

namespace kiln::reliability {
namespace {

bool named_in_manifest(const Workspace &ws, const Named &named) {
  const auto manifest = store::read_manifest(ws.store() / "consumers" / named.consumer / "manifest.json", named.consumer);
  return manifest && manifest->artifacts.count(named.name) != 0;
}

std::map<std::string, int> counted(const StoreCheck &check) {
  std::map<std::string, int> out;
  for (const auto &[kind, paths] : check.leftovers) out[kind] += static_cast<int>(paths.size());
  return out;
}

}  // namespace

Verified verify_store(const Workspace &ws) {
  Verified verified;
  verified.outcome = run(ws.kiln({"verify", "--store", ws.store().string(), "--json"}), ws.env(), ws.root());
  try {
    const nlohmann::json report = nlohmann::json::parse(verified.outcome.out);  // kept: see crash_import.cpp
    for (const auto &finding : report["findings"]) {
      verified.findings.push_back({finding["kind"], finding["severity"], finding["path"]});
    }
  } catch (const std::exception &error) {
    FAIL_CHECK("kiln verify --json printed no report (" << std::string(error.what()) << "): " << verified.outcome.describe());
  }
  return verified;
}

std::string what_landed(const Workspace &ws, const Named &named) {
  if (named_in_manifest(ws, named)) return "named (manifest updated)";
  bool staging = false;
  boost::system::error_code error;
  for (fs::directory_iterator it(ws.store() / "consumers" / named.consumer / "store", error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name[0] != '.') return "entry committed, not yet named";
    staging = staging || name.rfind(".staging-", 0) == 0;
  }
  return staging ? "staging directories only" : "nothing visible";
}

std::map<std::string, int> check_after_kill(const Scenario &scenario, const Workspace &ws) {
  std::map<std::string, int> leftovers;
  if (scenario.default_checks) {
    const StoreCheck check = check_store(ws, scenario.names);
    CHECK_MESSAGE(check.ok(), "after the kill:\n" << check.report());
    leftovers = counted(check);
  }
  if (scenario.after_kill) scenario.after_kill(ws);
  return leftovers;
}

std::map<std::string, int> check_after_next(const Scenario &scenario, const Workspace &ws, const Op &op,
                                            const Outcome &next) {
  std::map<std::string, int> leftovers;
  if (scenario.default_checks) {
    const StoreCheck check = check_store(ws, scenario.names);
    CHECK_MESSAGE(check.ok(), "after the next " << op.label << ":\n" << check.report());
    for (const auto &problem : unswept(check)) CHECK_MESSAGE(false, problem);
    CHECK_MESSAGE(named_in_manifest(ws, {op.consumer, op.name}), op.label << " did not name " << op.name);
    leftovers = counted(check);
  }
  if (scenario.after_next) scenario.after_next(ws, next);
  return leftovers;
}

}  // namespace kiln::reliability
