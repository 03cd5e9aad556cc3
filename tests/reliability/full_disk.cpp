#include "reliability/full_disk.hpp"

#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <map>
#include <set>

#include <boost/filesystem/operations.hpp>

#include "reliability/store_check.hpp"
#include "reliability/suite.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

namespace kiln::reliability {
namespace {

constexpr std::uint64_t kPage = 4096;  // tmpfs allocates whole pages

// Run inside `unshare -r -m`: $1 the store (mount point), $2 its prepared contents, $3 where the
// command's outcome and the store go, $4 the tmpfs size, $5 the bytes to leave free (-1: no
// filler); the rest is the command.
constexpr const char *kScript = R"sh(set -e
store=$1 seed=$2 out=$3 size=$4 free=$5
shift 5
mount -t tmpfs -o size="$size",mode=0755 kiln-small-disk "$store"
cp -a "$seed/." "$store/"
df_of() { df -B1 --output="$1" "$store" | tail -n 1 | tr -d ' '; }
before=$(df_of used)
if [ "$free" -ge 0 ]; then
  avail=$(df_of avail)
  if [ "$avail" -gt "$free" ]; then head -c $((avail - free)) /dev/zero > "$store/filler"; fi
fi
set +e
"$@" > "$out/op.out" 2> "$out/op.err"
echo $? > "$out/op.rc"
set -e
rm -f "$store/filler"
echo "$before $(df_of used)" > "$out/used"
mkdir "$out/store"
cp -a "$store/." "$out/store/"
)sh";

std::string unshare_path() {
  for (const char *candidate : {"/usr/bin/unshare", "/bin/unshare"}) {
    if (::access(candidate, X_OK) == 0) return candidate;
  }
  return "";
}

std::uint64_t pages(std::uint64_t bytes) { return (bytes + kPage - 1) / kPage * kPage; }

// Every regular file under `root` -> its size.
std::map<std::string, std::uint64_t> files_under(const fs::path &root) {
  std::map<std::string, std::uint64_t> found;
  boost::system::error_code error;
  for (fs::recursive_directory_iterator it(root, error), end; !error && it != end; it.increment(error)) {
    struct stat info {};
    if (::lstat(it->path().c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
      found[fs::relative(it->path(), root).string()] = static_cast<std::uint64_t>(info.st_size);
    }
  }
  return found;
}

std::uint64_t bytes_of(const std::map<std::string, std::uint64_t> &files) {
  std::uint64_t total = 0;
  for (const auto &[path, size] : files) total += pages(size);
  return total;
}

std::string sized(long long bytes) {  // in KiB, even past a MiB: the pages stay visible
  return bytes >= 1024 ? std::to_string(bytes / 1024) + " KiB" : std::to_string(bytes) + " B";
}

std::string manifest_text(const Workspace &ws, const std::string &consumer) {
  const fs::path file = ws.store() / "consumers" / consumer / "manifest.json";
  return fs::exists(file) ? test::read_text(file) : std::string();
}

bool names(const Workspace &ws, const Op &op) {
  const auto manifest = store::read_manifest(ws.store() / "consumers" / op.consumer / "manifest.json", op.consumer);
  return manifest && manifest->artifacts.count(op.name) != 0;
}

// The line of a command's stderr that says why it failed (a build prints its progress first).
std::string error_line(const std::string &text) {
  std::size_t start = text.find("error:");
  start = start == std::string::npos ? 0 : text.rfind('\n', start) + 1;
  const std::string line = text.substr(start, text.find('\n', start) - start);
  return line.size() > 150 ? line.substr(0, 150) + "..." : line;
}

std::vector<std::string> leftover_paths(const StoreCheck &check) {
  std::vector<std::string> paths;
  for (const auto &[kind, each] : check.leftovers) {
    for (const auto &path : each) paths.push_back(kind + ": " + path);
  }
  return paths;
}

// Sets back the mtime of `path` and of everything below it by `seconds`: leftovers past the
// sweep's bound, as a later day finds them.
void age(const fs::path &path, long seconds) {
  const struct timeval then[2] = {{std::time(nullptr) - seconds, 0}, {std::time(nullptr) - seconds, 0}};
  boost::system::error_code error;
  if (fs::is_directory(fs::symlink_status(path, error))) {
    for (fs::recursive_directory_iterator it(path, error), end; !error && it != end; it.increment(error)) {
      ::lutimes(it->path().c_str(), then);
    }
  }
  ::lutimes(path.c_str(), then);
}

// What one fill level saw, for the figures.
struct LevelFigures {
  bool failed = false;
  int left = 0;        // leftovers right after the run
  int after_next = 0;  // ... after the next run
  int after_repair = 0;
};

LevelFigures run_level(const Scenario &scenario, const FillLevel &level, const fs::path &root) {
  INFO(scenario.title << ", " << level.label << " (" << level.free_bytes << " bytes free)");
  LevelFigures figures;
  const Workspace ws(root);
  scenario.setup(ws);
  const Op op = scenario.op(ws);
  const std::string manifest_before = manifest_text(ws, op.consumer);
  const std::uint64_t seed = bytes_of(files_under(ws.store()));
  const DiskRun run_full = run_on_small_disk(ws, op, seed + static_cast<std::uint64_t>(level.free_bytes) + (4u << 20),
                                             level.free_bytes);
  const Outcome &done = run_full.op;
  figures.failed = !done.ok();

  // A failure is an I/O error that says what: the file and "No space left on device" -- or,
  // from an import, the refusal made before extracting anything: more bytes than are free there.
  if (figures.failed) {
    CHECK_MESSAGE(done.exit_code == 1, "a full disk is an I/O error (exit 1): " << done.describe());
    const bool said_no_space = done.err.find("No space left on device") != std::string::npos ||
                               done.err.find(" bytes free in ") != std::string::npos;
    CHECK_MESSAGE(said_no_space, done.describe());
    CHECK_MESSAGE(done.err.find(ws.store().string()) != std::string::npos,
                  "the error names no path of the store: " << done.describe());
    // What this machine could not store is not the remote's or the bundle's fault.
    CHECK_MESSAGE(done.err.find(" refused") == std::string::npos, "a full disk called a refusal: " << done.describe());
  }

  // The store whole: nothing partial visible, the manifest as it was or naming a complete entry,
  // and nothing a failed writer left behind.
  const StoreCheck after = check_store(ws, scenario.names, false);
  CHECK_MESSAGE(after.ok(), "after the run:\n" << after.report());
  if (figures.failed && manifest_text(ws, op.consumer) != manifest_before) {
    CHECK_MESSAGE(names(ws, op), "a failed " << op.label << " changed the manifest without naming " << op.name);
  }
  figures.left = after.leftover_count();
  for (const auto &path : leftover_paths(after)) CHECK_MESSAGE(false, "left behind by " << op.label << ": " << path);

  // kiln verify: what is left is reported as a leftover; nothing else but an unnamed entry.
  const Verified verified = verify_store(ws);
  CHECK_MESSAGE(verified.outcome.ok(), "kiln verify: " << verified.outcome.describe());
  std::set<std::string> reported;
  for (const auto &finding : verified.findings) {
    const bool leftover = finding.kind == "staging_leftover" || finding.kind == "temp_leftover";
    if (leftover) reported.insert(finding.path);
    CHECK_MESSAGE((leftover || finding.kind == "orphan_entry"), "kiln verify after the run: " << finding.describe());
  }
  for (const auto &[kind, paths] : after.leftovers) {
    for (const auto &path : paths) CHECK_MESSAGE(reported.count(path) != 0, "kiln verify does not report " << path);
  }

  // The next run, with the space back, succeeds and leaves nothing behind either.
  boost::system::error_code ignored;
  fs::remove(ws.compile_log(), ignored);  // what the next run compiles, only
  const Outcome next = run(op.argv, op.env, ws.root());
  CHECK_MESSAGE(next.ok(), "the next " << op.label << ": " << next.describe());
  if (next.ok()) {
    for (const auto &[kind, count] : check_after_next(scenario, ws, op, next)) figures.after_next += count;
  }

  // Whatever is still there once past the sweep's bound: kiln gc and kiln verify --repair remove it.
  if (figures.after_next > 0) {
    const StoreCheck left = check_store(ws, scenario.names, false);
    for (const auto &[kind, paths] : left.leftovers) {
      for (const auto &path : paths) age(path, 2 * 3600);
    }
    const Outcome gc = run(ws.kiln({"gc", "--json"}), ws.env(), ws.root());
    CHECK_MESSAGE(gc.ok(), "kiln gc: " << gc.describe());
    const Outcome repair = run(ws.kiln({"verify", "--repair", "--store", ws.store().string(), "--json"}), ws.env(), ws.root());
    CHECK_MESSAGE(repair.ok(), "kiln verify --repair: " << repair.describe());
    const StoreCheck repaired = check_store(ws, scenario.names, false);
    figures.after_repair = repaired.leftover_count();
    for (const auto &path : leftover_paths(repaired)) CHECK_MESSAGE(false, "kept by gc and verify --repair: " << path);
  }

  say("  %-44s %9s free: %s; left %d, after the next run %d%s", level.label.c_str(), sized(level.free_bytes).c_str(),
      figures.failed ? ("exit " + std::to_string(done.exit_code) + " \"" + error_line(done.err) + "\"").c_str() : "ok",
      figures.left, figures.after_next,
      figures.after_next > 0 ? (", after gc and repair " + std::to_string(figures.after_repair)).c_str() : "");
  return figures;
}

}  // namespace

std::optional<std::string> no_small_disk() {
  static const std::optional<std::string> missing = []() -> std::optional<std::string> {
    if (unshare_path().empty()) return std::string("no unshare(1) here, so no tmpfs of a test's own can be mounted");
    const auto probe = test::run_shell(
        unshare_path() + " -r -m sh -c 'd=$(mktemp -d) && mount -t tmpfs -o size=64k none \"$d\" && "
        "test \"$(df -B1 --output=avail \"$d\" | tail -n 1 | tr -d \" \")\" -le 65536; s=$?; umount \"$d\"; rmdir \"$d\"; "
        "exit $s'");
    if (probe.exit_code != 0) {
      return "a tmpfs in a private mount namespace (unshare -r -m, then mount -t tmpfs -o size=64k) is not permitted "
             "here: " + probe.err;
    }
    return std::nullopt;
  }();
  return missing;
}

DiskRun run_on_small_disk(const Workspace &ws, const Op &op, std::uint64_t size_bytes, long long free_bytes) {
  const fs::path seed = ws.root() / "small-disk-seed", out = ws.root() / "small-disk-out";
  fs::remove_all(seed);
  fs::remove_all(out);
  fs::create_directories(out);
  if (fs::exists(ws.store())) {
    fs::rename(ws.store(), seed);
  } else {
    fs::create_directories(seed);
  }
  fs::create_directories(ws.store());
  std::vector<std::string> argv = {unshare_path(),      "-r",         "-m",       "/bin/sh",
                                   "-c",                kScript,      "small-disk", ws.store().string(),
                                   seed.string(),       out.string(), std::to_string(pages(size_bytes)),
                                   std::to_string(free_bytes)};
  argv.insert(argv.end(), op.argv.begin(), op.argv.end());
  const Outcome shell = run(argv, op.env, ws.root());
  REQUIRE_MESSAGE((shell.ok() && fs::exists(out / "store")), "the small disk for " << op.label << ": " << shell.describe());

  DiskRun result;
  result.op.exit_code = std::stoi(test::read_text(out / "op.rc"));
  result.op.out = test::read_text(out / "op.out");
  result.op.err = test::read_text(out / "op.err");
  result.op.seconds = shell.seconds;
  const std::string used = test::read_text(out / "used");
  result.used_before = std::stoull(used.substr(0, used.find(' ')));
  result.used_after = std::stoull(used.substr(used.find(' ') + 1));
  fs::remove(ws.store());  // the mount point, empty again
  fs::rename(out / "store", ws.store());
  fs::remove_all(seed);
  fs::remove_all(out);
  return result;
}

Needs measure(const Scenario &scenario, const fs::path &dir) {
  const Workspace ws(dir);
  scenario.setup(ws);
  const Op op = scenario.op(ws);
  const auto before = files_under(ws.store());
  const DiskRun done = run_on_small_disk(ws, op, bytes_of(before) + (1ull << 30), -1);
  REQUIRE_MESSAGE(done.op.ok(), "measuring " << op.label << ": " << done.op.describe());
  Needs needs;
  needs.total = done.used_after - done.used_before;
  for (const auto &[path, size] : files_under(ws.store())) {
    const auto found = before.find(path);
    if (found != before.end() && found->second == size) continue;
    // <store>/abi/..., consumers/<consumer>/objects/..., consumers/<consumer>/store/<key>/<file>
    std::vector<std::string> parts;
    for (const auto &part : fs::path(path)) parts.push_back(part.string());
    if (parts[0] == "abi") needs.abi += pages(size);
    if (parts.size() > 3 && parts[0] == "consumers" && parts[2] == "objects") needs.objects += pages(size);
    if (parts.size() == 5 && parts[0] == "consumers" && parts[2] == "store") needs.entries += pages(size);
    needs.largest = std::max(needs.largest, size);
  }
  return needs;
}

std::vector<FillLevel> fill_levels(const Needs &needs) {
  const auto need = static_cast<long long>(needs.total);
  std::vector<FillLevel> wanted = {{"no byte free", 0}, {"one page free", static_cast<long long>(kPage)}};
  if (needs.abi > 0) wanted.push_back({"half the ABI headers' copy free", static_cast<long long>(needs.abi / 2)});
  if (needs.objects > 0) {  // the compiles' scratch objects, then their copies into the object cache
    const auto abi = static_cast<long long>(needs.abi), objects = static_cast<long long>(needs.objects);
    wanted.push_back({"the ABI copy and half the objects free", abi + objects / 2});
    wanted.push_back({"the ABI copy and the objects free", abi + objects});
    wanted.push_back({"the ABI copy and the objects twice free", abi + 2 * objects});
  }
  wanted.push_back({"half of what it writes free", need / 2});
  if (needs.largest > 0) {
    wanted.push_back({"all it writes but half the artifact free", need - static_cast<long long>(needs.largest / 2)});
  }
  wanted.push_back({"all it writes but one page free", need - static_cast<long long>(kPage)});
  wanted.push_back({"what it writes, twice over, free", 2 * need + 64 * 1024});
  std::vector<FillLevel> levels;
  std::set<long long> seen;
  for (auto level : wanted) {
    level.free_bytes = std::max(0ll, level.free_bytes) / static_cast<long long>(kPage) * static_cast<long long>(kPage);
    if (seen.insert(level.free_bytes).second) levels.push_back(level);
  }
  std::sort(levels.begin(), levels.end(), [](const FillLevel &a, const FillLevel &b) { return a.free_bytes < b.free_bytes; });
  return levels;
}

void fill_at_levels(const Scenario &scenario, const fs::path &dir) {
  const Needs needs = measure(scenario, dir / "measure");
  say("full disk: %s: writes %s (ABI headers' copy %s, object cache %s, entries %s; largest file %s)",
      scenario.title.c_str(), sized(static_cast<long long>(needs.total)).c_str(), sized(static_cast<long long>(needs.abi)).c_str(),
      sized(static_cast<long long>(needs.objects)).c_str(), sized(static_cast<long long>(needs.entries)).c_str(),
      sized(static_cast<long long>(needs.largest)).c_str());
  REQUIRE(needs.total > 0);
  int failed = 0, left = 0, after_next = 0, index = 0;
  const std::vector<FillLevel> levels = fill_levels(needs);
  for (const auto &level : levels) {
    const LevelFigures figures = run_level(scenario, level, dir / ("level-" + std::to_string(index++)));
    failed += figures.failed ? 1 : 0;
    left += figures.left;
    after_next += figures.after_next;
  }
  // The levels must reach both ends: a run that cannot write fails, one with room to spare succeeds.
  CHECK_MESSAGE(failed > 0, "no fill level made " << scenario.title << " fail");
  CHECK_MESSAGE(failed < static_cast<int>(levels.size()), "no fill level let " << scenario.title << " succeed");
  say("full disk: %s: %zu fill levels, %d failed, %d leftovers after a run, %d after the next", scenario.title.c_str(),
      levels.size(), failed, left, after_next);
}

}  // namespace kiln::reliability
