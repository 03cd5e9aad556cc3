// Crash scenarios of kiln import (src/bundle/reader.cpp, Storage::point_all): a signed bundle of
// a published and a built entry, imported into the writable cache over older versions of its
// names and --into a fresh directory, killed at every write step. After each kill the target
// must be whole (check_store) with nothing `kiln verify` reports but what a sweep removes or
// what the next import names; the next import must succeed and leave every entry of the bundle
// named with its digests, and one more import must find everything already present.
#include <sys/stat.h>

#include <memory>
#include <set>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "reliability/crash_scenarios.hpp"
#include "store/entry.hpp"
#include "store/layout.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

namespace kiln::reliability {
namespace {

// The bundle every import scenario imports, made once per run: crash/plug (published, no input
// key) and crash/built (built with the stand-in nvcc: an input key, so a bykey pointer).
struct Source {
  test::TempDir dir;
  fs::path bundle, pub, root_pub;
  struct Entry {
    std::string name, content_key, digest;
  };
  std::vector<Entry> entries;
};

const Source &source() {
  static const std::unique_ptr<Source> made = [] {
    auto out = std::make_unique<Source>();
    const Workspace ws(out->dir / "source");
    setup_op(ws, ws.publish("plug"));
    setup_op(ws, ws.build(Backend::fake_nvcc, "built", 0));
    const fs::path key = out->dir / "vendor";
    must(run(ws.kiln({"keygen", "-o", key.string()}), ws.env(), ws.root()), "kiln keygen");
    out->bundle = out->dir / "crash.kbundle";
    out->pub = out->dir / "vendor.pub";
    // A fleet key list naming the vendor key, carried by the bundle: an import into a store that
    // pins the root keeps it (import.after_key_list).
    const fs::path root = out->dir / "root", list = out->dir / "fleet-keys.json";
    out->root_pub = out->dir / "root.pub";
    must(run(ws.kiln({"keygen", "-o", root.string()}), ws.env(), ws.root()), "kiln keygen");
    must(run(ws.kiln({"key", "init", list.string(), "--root", root.string() + ".key"}), ws.env(), ws.root()),
         "kiln key init");
    must(run(ws.kiln({"key", "add", list.string(), "--root", root.string() + ".key", "--key", out->pub.string(),
                      "--role", "release"}),
             ws.env(), ws.root()),
         "kiln key add");
    const Outcome exported = run(ws.kiln({"export", "--consumer", "crash", "-o", out->bundle.string(), "--sign",
                                          (out->dir / "vendor.key").string(), "--key-list", list.string(), "--json"}),
                                 ws.env(), ws.root());
    must(exported, "kiln export");
    const nlohmann::json report = nlohmann::json::parse(exported.out);  // kept: a range-for over a temporary's member dangles
    for (const auto &entry : report["entries"]) {
      const std::string content_key = entry["content_key"];
      const auto meta = store::read_entry_meta(ws.store() / "consumers" / "crash" / "store" / content_key);
      out->entries.push_back({entry["name"], content_key, meta.digest});
    }
    REQUIRE(out->entries.size() == 2);
    return out;
  }();
  return *made;
}

bool is_bundle_key(const std::string &key) {
  for (const auto &entry : source().entries) {
    if (entry.content_key == key) return true;
  }
  return false;
}

// The directory an import writes: the cache, or the --into directory (a store at image/store,
// so that a Workspace rooted at image/ reads it as its own).
Workspace target(const Workspace &ws, bool into) { return into ? Workspace(ws.root() / "image") : ws; }

Op import_op(const Workspace &ws, bool into) {
  Op op;
  op.label = into ? "import --into a fresh directory" : "import into the writable cache";
  // Into the cache, the store's key list judges the signer; --into, the --trust key does.
  op.argv = ws.kiln({"import", source().bundle.string(), "--json"});
  if (into) {
    for (const auto &arg :
         {std::string("--trust"), source().pub.string(), std::string("--into"), target(ws, true).store().string()}) {
      op.argv.push_back(arg);
    }
  }
  op.env = ws.env();
  op.consumer = "crash";
  op.name = "plug";
  return op;
}

fs::path manifest_file(const Workspace &t) { return t.store() / "consumers" / "crash" / "manifest.json"; }

// What `kiln verify` may say of a target: after a kill, leftovers a sweep removes (staging
// directories, temps) and entries committed but not yet named; after the next import the same
// leftovers only where the sweep must wait (temps, lock-less staging directories) and no entry
// of the bundle unnamed.
void check_verify(const Workspace &t, bool after_next) {
  if (!after_next && !fs::exists(t.store())) return;  // an --into import killed before it made the directory
  const Verified verified = verify_store(t);
  CHECK_MESSAGE(verified.outcome.ok(), "kiln verify: " << verified.outcome.describe());
  for (const auto &finding : verified.findings) {
    const std::string name = fs::path(finding.path).filename().string();
    bool allowed = finding.kind == "temp_leftover";
    if (finding.kind == "staging_leftover") {
      allowed = !after_next || !fs::exists(fs::path(finding.path) / store::kStagingLockFile);
    }
    if (finding.kind == "orphan_entry") allowed = !after_next || !is_bundle_key(name);
    const std::string when = after_next ? "the next import" : "the kill";
    CHECK_MESSAGE(allowed, "kiln verify after " << when << ": " << finding.describe());
  }
}

// Every entry of the bundle named by its manifest record, with the bundle's digest.
void check_imported(const Workspace &t) {
  const auto manifest = store::read_manifest(manifest_file(t), "crash");
  REQUIRE_MESSAGE(manifest.has_value(), "no manifest in " << t.store());
  for (const auto &entry : source().entries) {
    INFO(entry.name);
    const auto found = manifest->artifacts.find(entry.name);
    REQUIRE(found != manifest->artifacts.end());
    CHECK(found->second.content_key == entry.content_key);
    CHECK(store::read_entry_meta(t.store() / "consumers" / "crash" / "store" / entry.content_key).digest ==
          entry.digest);
  }
  // The release the store accepted, kept apart from the manifest (bundle/release_versions.hpp).
  const auto versions = nlohmann::json::parse(kiln::test::read_text(t.store() / "consumers" / "crash" / "versions.json"));
  REQUIRE(versions["signers"].size() == 1);
  for (const auto &entry : source().entries) {
    CHECK(versions["signers"].begin().value()[entry.name]["content_key"] == entry.content_key);
  }
}

// The key list the bundle carried, kept whole where the store pins its root.
void check_key_list(const Workspace &t) {
  const auto list = nlohmann::json::parse(kiln::test::read_text(t.store() / "trust" / "keys.json"));
  CHECK(list["signed"]["generation"] == 2);
}

// One more import changes nothing: every entry already present, the manifest not rewritten.
void check_idempotent(const Workspace &ws, const Op &op, const Workspace &t) {
  struct stat before {};
  REQUIRE(::stat(manifest_file(t).c_str(), &before) == 0);
  const Outcome again = run(op.argv, op.env, ws.root());
  REQUIRE_MESSAGE(again.ok(), "one more " << op.label << ": " << again.describe());
  const nlohmann::json report = nlohmann::json::parse(again.out);
  CHECK(report["entries"].size() == source().entries.size());
  for (const auto &entry : report["entries"]) CHECK_MESSAGE(entry["status"] == "already present", entry.dump());
  struct stat after {};
  REQUIRE(::stat(manifest_file(t).c_str(), &after) == 0);
  CHECK(after.st_ino == before.st_ino);
}

std::vector<Named> names(bool into) {
  std::vector<Named> out = {{"crash", "plug"}, {"crash", "built"}};
  if (!into) out.push_back({"crash", "keep"});
  return out;
}

}  // namespace

Scenario import_scenario(bool into) {
  std::vector<std::string> steps = {"import.after_extract",   "import.after_versions", "staging.after_fsync",
                                    "staging.after_rename",   "import.after_entry",    "import.after_bykey",
                                    "import.before_manifest", "manifest.locked",       "import.after_manifest"};
  if (!into) steps.insert(steps.begin() + 2, "import.after_key_list");
  const std::vector<std::string> points = with_file_points(steps);
  Scenario s;
  s.title = into ? "import a signed bundle --into a fresh directory"
                 : "import a signed bundle into the writable cache over an older version of one of its names";
  s.points = points;
  s.setup = [into](const Workspace &ws) {
    (void)source();  // made before the first kill, not in a child's window
    if (into) return;
    must(run(ws.kiln({"key", "trust", "--root", source().root_pub.string()}), ws.env(), ws.root()), "kiln key trust");
    setup_op(ws, ws.publish("plug", "sm_90"));  // the import renames plug to the bundle's entry
    setup_op(ws, ws.publish("keep", "sm_90"));  // a name the bundle does not carry, on the same entry
  };
  s.op = [into](const Workspace &ws) { return import_op(ws, into); };
  s.names = names(into);
  s.default_checks = !into;  // --into: the checks run on the directory, the cache stays empty
  s.after_kill = [into](const Workspace &ws) {
    const Workspace t = target(ws, into);
    if (into) {
      const StoreCheck check = check_store(t, names(true));
      CHECK_MESSAGE(check.ok(), "the --into directory after the kill:\n" << check.report());
    }
    check_verify(t, false);
  };
  s.after_next = [into](const Workspace &ws, const Outcome &) {
    const Workspace t = target(ws, into);
    if (into) {
      const StoreCheck check = check_store(t, names(true));
      CHECK_MESSAGE(check.ok(), "the --into directory after the next import:\n" << check.report());
      for (const auto &problem : unswept(check)) CHECK_MESSAGE(false, problem);
      CHECK_MESSAGE(!fs::exists(ws.store() / "consumers"), "import --into wrote the writable cache");
    }
    check_imported(t);
    if (!into) check_key_list(t);
    check_verify(t, true);
    check_idempotent(ws, import_op(ws, into), t);
  };
  return s;
}

std::vector<std::string> bundle_keys() {
  std::vector<std::string> keys;
  for (const auto &entry : source().entries) keys.push_back(entry.content_key);
  return keys;
}

std::vector<Scenario> import_scenarios() { return {import_scenario(false), import_scenario(true)}; }

}  // namespace kiln::reliability
