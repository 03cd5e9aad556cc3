// Crash scenarios of the remote caches (src/remote/cache.cpp), against the test
// servers (nginx with WebDAV, redis-server: support/remote_servers.hpp):
// - a build a remote serves: the signed entry is downloaded into a staging directory of the
//   writable cache, checked and committed, then named. After a kill the cache must be whole and
//   the next build must finish with the remote's entry, compiling nothing.
// - a build uploading what it built, holding the remote's build lease meanwhile. After a kill the
//   remote must hold the entry whole or not at all (another machine fetches it or builds, and
//   never finds a torn upload), the next build must not wait for the dead builder's lease, and
//   after `kiln remote push` another machine must fetch the entry without compiling.
#include <algorithm>
#include <memory>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "reliability/crash_scenarios.hpp"
#include "store/entry.hpp"
#include "files/files.hpp"
#include "store/layout.hpp"
#include "remote/backend.hpp"
#include "remote/lease_holder.hpp"
#include "remote/config.hpp"
#include "support/fixtures.hpp"
#include "support/remote_servers.hpp"

namespace kiln::reliability {
namespace {

// The entry the fetch scenarios download: crash/built (stand-in nvcc, variant 0) built once per
// run, signed, and uploaded to a namespace of each server of its own.
struct RemoteSource {
  test::TempDir dir;
  fs::path key, pub;
  std::string http, redis;  // the remotes holding it
  std::string content_key, input_key;
};

const RemoteSource &remote_source() {
  static const std::unique_ptr<RemoteSource> made = [] {
    auto out = std::make_unique<RemoteSource>();
    const test::RemoteNamespaces remotes = test::fresh_remote_namespaces();
    out->http = remotes.http;
    out->redis = remotes.redis;
    const Workspace ws(out->dir / "source");
    must(run(ws.kiln({"keygen", "-o", (out->dir / "vendor").string()}), ws.env(), ws.root()), "kiln keygen");
    out->key = out->dir / "vendor.key";
    out->pub = out->dir / "vendor.pub";
    Op build = ws.build(Backend::fake_nvcc, "built", 0);
    build.env["KILN_REMOTE"] = out->http + "|" + out->redis;
    build.env["KILN_REMOTE_SIGN"] = out->key.string();
    const Outcome built = run(build.argv, build.env, ws.root());
    must(built, "the source build");
    const nlohmann::json report = nlohmann::json::parse(built.out);
    REQUIRE(report["uploads"].size() == 2);
    for (const auto &upload : report["uploads"]) REQUIRE_MESSAGE(upload["status"] == "uploaded", upload.dump());
    out->content_key = report["content_key"];
    out->input_key = report["input_key"];
    return out;
  }();
  return *made;
}

int compiles(const Workspace &ws) {
  const fs::path log = ws.compile_log();
  const CompileLog calls = read_compile_log(fs::exists(log) ? test::read_text(log) : "");
  int count = calls.links;
  for (const auto &unit : calls.units) count += unit.second;
  return count;
}

// The remote build of `ws`, reading the remotes the scenario names with the signer trusted.
Op remote_build(const Workspace &ws, const std::string &remotes) {
  Op op = ws.build(Backend::fake_nvcc, "built", 0);
  op.env["KILN_REMOTE"] = remotes;
  op.env["KILN_REMOTE_TRUST"] = remote_source().pub.string();
  op.env["KILN_REMOTE_SIGN"] = "";
  return op;
}

// The remote an upload scenario's workspace writes: a namespace of the HTTP server of its own,
// named after the workspace (the killed run and the next one share it).
std::string upload_remote(const Workspace &ws) {
  return test::remote_servers().http_url + "/up-" + ws.root().filename().string();
}

Op upload_op(const Workspace &ws) {
  Op op = remote_build(ws, upload_remote(ws));
  op.env["KILN_REMOTE_SIGN"] = remote_source().key.string();
  op.label = "build uploading to the http remote";
  return op;
}

// A staging directory holding no more than an upload's: its lock, the transfer bundle or the
// bundle's temp file.
bool is_transfer_staging(const std::string &dir) {
  boost::system::error_code error;
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name != store::kStagingLockFile && name != "transfer.kbundle" &&
        name.rfind(files::atomic_temp_prefix("transfer.kbundle"), 0) != 0) {
      return false;
    }
  }
  return !error;
}

// Another machine building the same recipe from the upload remote, read-only.
Outcome other_machine_build(const Workspace &ws, const std::string &as) {
  const Workspace other(ws.root() / as);
  const Op op = remote_build(other, upload_remote(ws) + ";read-only");
  return run(op.argv, op.env, other.root());
}

}  // namespace

Scenario remote_fetch_scenario(const std::string &transport) {
  Scenario s;
  s.title = "build a recipe the " + transport + " remote holds (download, check, commit, name)";
  s.points = with_file_points(
      {"import.after_extract", "staging.after_fsync", "staging.after_rename", "build.after_bykey", "manifest.locked"});
  s.setup = [](const Workspace &) { (void)remote_source(); };  // made before the first kill
  s.op = [transport](const Workspace &ws) {
    const RemoteSource &source = remote_source();
    Op op = remote_build(ws, (transport == "redis" ? source.redis : source.http) + ";read-only");
    op.label = "build served by the " + transport + " remote";
    return op;
  };
  s.names = {{"crash", "built"}};
  s.after_kill = [](const Workspace &ws) { CHECK_MESSAGE(compiles(ws) == 0, "a killed fetch compiled"); };
  s.after_next = [](const Workspace &ws, const Outcome &) {
    CHECK_MESSAGE(compiles(ws) == 0, "the next build after a killed fetch compiled instead of fetching");
    const auto meta = store::read_entry_meta(ws.store() / "consumers" / "crash" / "store" / remote_source().content_key);
    CHECK(meta.content_key == remote_source().content_key);
  };
  return s;
}

Scenario remote_upload_scenario() {
  Scenario s;
  s.title = "build and upload to the http remote, holding its build lease";
  s.points = with_file_points({"file.after_copy_fsync", "staging.after_fsync", "staging.after_rename",
                               "build.after_entry", "build.after_bykey", "manifest.locked"});
  s.setup = [](const Workspace &) { (void)remote_source(); };
  s.op = upload_op;
  s.names = {{"crash", "built"}};
  // The default checks, but one leftover they refuse is right after the next build when that
  // build is a hit: a killed upload's staging directory (its transfer bundle, whole or being
  // written, or nothing yet). A hit writes nothing and so sweeps nothing; the next build that
  // writes does.
  s.default_checks = false;
  s.after_kill = [](const Workspace &ws) {
    const StoreCheck check = check_store(ws, {{"crash", "built"}});
    CHECK_MESSAGE(check.ok(), "after the kill:\n" << check.report());
    // A lease the killed build left is one the next build takes over at once (no 30 s wait).
    // Killed between the lease's MKCOL and its holder's PUT, it names no holder: that one is
    // taken over once it goes unrenewed for the lease's time to live.
    const auto server = remote::make_backend(remote::parse_remote(upload_remote(ws), "test"));
    const auto lease = server->current_lease("lease/crash/" + remote_source().input_key);
    if (lease && !lease->empty()) {
      CHECK_MESSAGE(remote::lease_holder_gone(*lease), "the killed build's lease: " << *lease);
    }
    // Whole or absent on the remote: another machine fetches it or builds, and never refuses a
    // torn upload.
    const Outcome other = other_machine_build(ws, "machine-b");
    CHECK_MESSAGE(other.ok(), "another machine's build after the kill: " << other.describe());
    CHECK_MESSAGE(other.err.find("refused") == std::string::npos, "a torn upload is visible: " << other.err);
  };
  s.after_next = [](const Workspace &ws, const Outcome &next) {
    StoreCheck check = check_store(ws, {{"crash", "built"}});
    CHECK_MESSAGE(check.ok(), "after the next build:\n" << check.report());
    CHECK(check.named == 1);
    if (next.out.find("\"outcome\": \"hit\"") != std::string::npos) {
      auto &staging = check.leftovers["staging"];
      staging.erase(std::remove_if(staging.begin(), staging.end(), is_transfer_staging), staging.end());
    }
    for (const auto &problem : unswept(check)) CHECK_MESSAGE(false, problem);
    const Outcome push = run(ws.kiln({"remote", "push", "--consumer", "crash", "--json"}), upload_op(ws).env, ws.root());
    CHECK_MESSAGE(push.ok(), "kiln remote push: " << push.describe());
    const Outcome other = other_machine_build(ws, "machine-c");
    CHECK_MESSAGE(other.ok(), "another machine's build after the push: " << other.describe());
    CHECK_MESSAGE(other.out.find("\"fetched\"") != std::string::npos, "not fetched after the push: " << other.out);
    CHECK(compiles(Workspace(ws.root() / "machine-c")) == 0);
  };
  return s;
}

}  // namespace kiln::reliability
