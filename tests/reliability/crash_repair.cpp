// Crash scenario of kiln verify --repair (src/store/maintenance/audit.cpp): a store holding each kind of
// damage repair handles -- a damaged published entry, a damaged built entry (so its bykey
// pointer dangles once it is moved aside), a missing entry, a dangling pointer, a dead writer's
// staging directory and, in a second consumer, a damaged manifest -- beside an intact entry,
// killed at every write step of the repair. After each kill the store holds no damage it did
// not hold before (what `kiln verify` calls damage lies where the setup put it), the manifests
// parse, the intact entry loads and each damaged name is still refused or cleanly absent. The
// next repair must succeed and leave exactly the store an uninterrupted repair leaves.
#include <sys/stat.h>

#include <algorithm>
#include <memory>
#include <regex>
#include <set>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "reliability/crash_scenarios.hpp"
#include "store/entry.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

namespace kiln::reliability {
namespace {

constexpr const char *kGarbage = "not a manifest";

fs::path entry_dir(const Workspace &ws, const std::string &consumer, const std::string &key) {
  return ws.store() / "consumers" / consumer / "store" / key;
}

std::string publish(const Workspace &ws, const std::string &name, const std::string &arch,
                    const std::string &consumer = "crash") {
  const Outcome outcome = run(ws.publish(name, arch, consumer).argv, ws.env(), ws.root());
  must(outcome, "setup: publish " + name);
  return nlohmann::json::parse(outcome.out)["content_key"];
}

// One byte of the entry's artifact changed: its digest no longer matches (damaged_entry).
void damage(const fs::path &entry) {
  const fs::path file = entry / store::read_entry_meta(entry).file;
  struct stat info {};
  REQUIRE(::stat(file.c_str(), &info) == 0);
  REQUIRE(::chmod(file.c_str(), 0600) == 0);
  std::string bytes = test::read_text(file);
  REQUIRE(bytes.size() > 100);
  bytes[100] = static_cast<char>(bytes[100] ^ 0x5a);
  test::write_text(file, bytes);
  REQUIRE(::chmod(file.c_str(), info.st_mode & 07777) == 0);
}

// The damaged store, made once; each kill runs on a copy (cp -a: modes and times kept).
struct Template {
  test::TempDir dir;
  Workspace ws{dir / "template"};
  std::string good_key;
  std::vector<std::string> damage;     // normalized paths of what verify calls damage before the repair
  std::vector<std::string> repaired;   // normalized findings of verify after an uninterrupted repair
};

// A finding with the workspace root and the random parts of the names repair gives (entries and
// manifests moved aside) replaced, so that two runs compare.
std::string normalized(const Workspace &ws, const std::string &text) {
  std::string out = text;
  const std::string root = ws.root().string();
  for (std::size_t at; (at = out.find(root)) != std::string::npos;) out.replace(at, root.size(), "<root>");
  static const std::regex aside(R"(\.staging-[^/]*-damaged)"), manifest(R"(manifest\.json\.damaged-[^/]*)");
  return std::regex_replace(std::regex_replace(out, aside, ".staging-*-damaged"), manifest, "manifest.json.damaged-*");
}

// verify's findings after a completed repair, normalized and sorted; temps are left out (a
// killed manifest write's temp is swept once a minute old: test_leftovers.cpp) but must be temps.
std::vector<std::string> settled_findings(const Workspace &ws) {
  const Verified verified = verify_store(ws);
  CHECK_MESSAGE(verified.outcome.ok(), "kiln verify after the repair: " << verified.outcome.describe());
  std::vector<std::string> out;
  for (const auto &finding : verified.findings) {
    if (finding.kind == "temp_leftover") {
      CHECK_MESSAGE(fs::path(finding.path).filename().string().find(".tmp-") != std::string::npos, finding.describe());
      continue;
    }
    out.push_back(normalized(ws, finding.kind + " " + finding.path));
  }
  std::sort(out.begin(), out.end());
  return out;
}

void copy_store(const Workspace &from, const Workspace &to) {
  must(run({"/bin/cp", "-a", from.store().string(), to.store().string()}, {}, to.root()), "cp -a the damaged store");
}

const Template &damaged_store() {
  static const std::unique_ptr<Template> made = [] {
    auto t = std::make_unique<Template>();
    const Workspace &ws = t->ws;
    t->good_key = publish(ws, "good", "none");
    damage(entry_dir(ws, "crash", publish(ws, "bad", "sm_90")));
    fs::remove_all(entry_dir(ws, "crash", publish(ws, "gone", "sm_80")));
    const Outcome built = run(ws.build(Backend::fake_nvcc, "built", 0).argv, ws.build(Backend::fake_nvcc, "built", 0).env,
                              ws.root());
    must(built, "setup: build");
    damage(entry_dir(ws, "crash", nlohmann::json::parse(built.out)["content_key"]));
    test::write_text(ws.store() / "consumers" / "crash" / "bykey" / std::string(32, 'a'), std::string(32, 'f') + "\n");
    Op killed = ws.publish("late", "sm_86");  // a new entry, killed with its staging directory complete
    killed.env["KILN_FAULT"] = "staging.after_fsync";
    REQUIRE(run(killed.argv, killed.env, ws.root()).killed());
    publish(ws, "x", "none", "crash2");
    test::write_text(ws.store() / "consumers" / "crash2" / "manifest.json", kGarbage);

    const Verified before = verify_store(ws);
    for (const auto &finding : before.findings) {
      if (finding.severity == "damage") t->damage.push_back(normalized(ws, finding.path));
    }
    REQUIRE(t->damage.size() == 4);  // bad, built, gone, crash2's manifest
    // The reference: an uninterrupted repair of a copy.
    const Workspace reference(t->dir / "reference");
    copy_store(ws, reference);
    must(run(reference.kiln({"verify", "--repair", "--json"}), reference.env(), reference.root()), "reference repair");
    t->repaired = settled_findings(reference);
    for (const auto &finding : t->repaired) {
      const bool expected = finding.rfind("staging_leftover ", 0) == 0 || finding.rfind("orphan_entry ", 0) == 0;
      CHECK_MESSAGE(expected, "after an uninterrupted repair: " << finding);
    }
    return t;
  }();
  return *made;
}

const std::vector<Named> kNames = {{"crash", "good"}, {"crash", "bad"}, {"crash", "gone"}, {"crash", "built"},
                                   {"crash2", "x"}};

int load_exit(const Workspace &ws, const Named &named, std::string *content_key = nullptr) {
  const Outcome load = run(ws.kiln({"load", "--json", named.consumer, named.name}), ws.env(), ws.root());
  if (load.ok() && content_key != nullptr) *content_key = nlohmann::json::parse(load.out)["resolution"]["content_key"];
  return load.signal != 0 ? -load.signal : load.exit_code;
}

void after_kill(const Workspace &ws) {
  const Template &t = damaged_store();
  const Verified verified = verify_store(ws);
  for (const auto &finding : verified.findings) {
    if (finding.severity != "damage") continue;
    const bool known = std::find(t.damage.begin(), t.damage.end(), normalized(ws, finding.path)) != t.damage.end();
    const bool kind = finding.kind == "damaged_entry" || finding.kind == "missing_entry" || finding.kind == "damaged_manifest";
    CHECK_MESSAGE((known && kind), "damage the repair made: " << finding.describe());
  }
  CHECK(store::read_manifest(ws.store() / "consumers" / "crash" / "manifest.json", "crash").has_value());
  const fs::path other = ws.store() / "consumers" / "crash2" / "manifest.json";
  if (fs::exists(other)) CHECK(test::read_text(other) == kGarbage);  // whole, or moved aside whole
  std::string key;
  CHECK(load_exit(ws, kNames[0], &key) == 0);
  CHECK(key == t.good_key);
  for (std::size_t i = 1; i < kNames.size(); ++i) {
    const int code = load_exit(ws, kNames[i]);
    CHECK_MESSAGE((code == 3 || code == 6), kNames[i].consumer << "/" << kNames[i].name << ": kiln load exit " << code);
  }
}

void after_next(const Workspace &ws, const Outcome &) {
  const Template &t = damaged_store();
  const StoreCheck check = check_store(ws, kNames);
  CHECK_MESSAGE(check.ok(), "after the next repair:\n" << check.report());
  for (const auto &problem : unswept(check)) CHECK_MESSAGE(false, problem);
  const auto manifest = store::read_manifest(ws.store() / "consumers" / "crash" / "manifest.json", "crash");
  REQUIRE(manifest.has_value());
  std::set<std::string> named;
  for (const auto &item : manifest->artifacts) named.insert(item.first);
  CHECK(named == std::set<std::string>{"good"});
  CHECK_FALSE(fs::exists(ws.store() / "consumers" / "crash2" / "manifest.json"));
  CHECK(settled_findings(ws) == t.repaired);
}

}  // namespace

std::vector<Scenario> repair_scenarios() {
  Scenario s;
  s.title = "verify --repair a store with each kind of damage";
  s.points = with_file_points({"repair.after_manifest_aside", "repair.after_move_aside", "repair.after_drop_record",
                               "manifest.locked", "repair.after_drop_pointer", "sweep.before_remove",
                               "sweep.after_remove"});
  s.setup = [](const Workspace &ws) { copy_store(damaged_store().ws, ws); };
  s.op = [](const Workspace &ws) {
    Op op;
    op.label = "verify --repair";
    op.argv = ws.kiln({"verify", "--repair", "--json"});
    op.env = ws.env();
    op.consumer = "crash";
    op.name = "good";
    return op;
  };
  s.names = kNames;
  s.default_checks = false;  // the store is damaged on purpose until the repair is done
  s.after_kill = after_kill;
  s.after_next = after_next;
  return {s};
}

}  // namespace kiln::reliability
