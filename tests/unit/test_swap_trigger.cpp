// Hot swap's cross-process trigger: a watching Swappable (SwapOptions::watch) swaps when `kiln
// swap`, `kiln publish` or another Runtime's publish bumps consumer/name's generation in
// <cache>/swap/generations, records what it did, and `kiln swap --json` reports it. The table
// file is never trusted when damaged or foreign, a full table is harmless, and destroying a
// watcher is prompt. Every wait is on a condition with a deadline.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "files/files.hpp"
#include "support/build_recipe.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/swap_fixture.hpp"
#include "swap/generations.hpp"

using namespace kiln;
using namespace kiln::test;
using nlohmann::json;

namespace {

using Clock = std::chrono::steady_clock;

// A store of the swap probes whose Runtime's log is kept, and the CLI's environment for it.
struct TriggerStore {
  TempDir dir;
  std::mutex log_mutex;
  std::string log_text;
  Runtime runtime;

  TriggerStore() : runtime(options()) {}

  RuntimeOptions options() {
    RuntimeOptions options = SwapStore::options(dir);
    options.log = [this](LogLevel level, const std::string &line) {
      std::lock_guard<std::mutex> lock(log_mutex);
      log_text += std::string(to_string(level)) + ": " + line + "\n";
    };
    return options;
  }
  std::string cache() const { return (dir / "cache").string(); }
  fs::path table_file() const { return dir / "cache" / "swap" / "generations"; }
  std::map<std::string, std::string> env() const {
    return {{"KILN_CACHE_DIR", cache()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
  }
  std::string log() {
    std::lock_guard<std::mutex> lock(log_mutex);
    return log_text;
  }
  std::string publish(const std::string &name, const std::string &file) { return publish_probe(runtime, name, file); }
};

// What the watcher thread reported through on_watched_swap.
struct Watched {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<SwapReport> reports;
  std::vector<std::string> errors;  // "" for a swap that happened

  SwapOptions options(SwapOptions base) {
    base.watch = true;
    base.watch_interval = std::chrono::milliseconds(5);
    base.on_watched_swap = [this](const SwapReport &report, const Error *error) {
      std::lock_guard<std::mutex> lock(mutex);
      reports.push_back(report);
      errors.push_back(error != nullptr ? error->what() : "");
      changed.notify_all();
    };
    return base;
  }
  // Copies under the lock: the watcher thread may report another swap meanwhile.
  SwapReport report(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    return reports.at(i);
  }
  std::string error(std::size_t i) {
    std::lock_guard<std::mutex> lock(mutex);
    return errors.at(i);
  }
  // Waits (up to 20 s) until `count` watched swaps were reported.
  bool wait_for(std::size_t count) {
    std::unique_lock<std::mutex> lock(mutex);
    return changed.wait_for(lock, std::chrono::seconds(20), [&] { return reports.size() >= count; });
  }
};

SwapOptions base_options() {
  SwapOptions options;
  options.consumer = "swap";
  options.name = "probe";
  options.interface_id = KILN_TEST_SWAP_INTERFACE_ID;
  options.device = -1;
  return options;
}

std::uint64_t served_version(const SwapProbe &probe, SwapReader &reader) { return version_of(cycle(probe, reader, 1)); }

}  // namespace

TEST_SUITE("swap") {

TEST_CASE("trigger: kiln publish and kiln swap from child processes make a watching Swappable swap; --json "
          "shows the acknowledgement") {
  TriggerStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();
  CHECK(served_version(probe, reader) == 1);

  // kiln publish of a new version (another process) bumps the generation.
  auto result = run_kiln({"publish", "--consumer", "swap", "--name", "probe", "--artifact", KILN_TEST_PLUGIN_SWAP_V2,
                          "--arch", "none", "--json"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string v2 = json::parse(result.out)["content_key"];
  REQUIRE(watched.wait_for(1));
  CHECK(watched.error(0).empty());
  CHECK(watched.report(0).swapped);
  CHECK(watched.report(0).to_key == v2);
  CHECK(served_version(probe, reader) == 2);

  // Back to v1 from this process; `kiln swap` (no --to) asks for what the name resolves to: v2.
  probe.rollback();
  CHECK(served_version(probe, reader) == 1);
  result = run_kiln({"swap", "swap", "probe", "--json", "--wait", "20000"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const json out = json::parse(result.out);
  CHECK(out["consumer"] == "swap");
  CHECK(out["content_key"].is_null());
  // v2's publish, then this request (v1's publish came before anyone watched: nothing to tell)
  CHECK(out["generation"].get<std::uint64_t>() == 2);
  CHECK(out["all_acknowledged"] == true);
  REQUIRE(out["acknowledged"].size() == 1);
  const json &ack = out["acknowledged"][0];
  CHECK(ack["pid"].get<std::int64_t>() == ::getpid());
  CHECK(ack["same_pid_namespace"] == true);
  CHECK(ack["outcome"] == "swapped");
  CHECK(ack["note"] == v2);
  CHECK(ack["generation"].get<std::uint64_t>() == 2);
  CHECK(out["pending"].empty());
  REQUIRE(watched.wait_for(2));
  CHECK(watched.report(1).was_resident);  // v2 stayed resident: nothing loaded
  CHECK(served_version(probe, reader) == 2);

  // Asked again: already serving, acknowledged as unchanged; the text form says so.
  result = run_kiln({"swap", "swap", "probe", "--wait", "20000"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(result.out.find("pid " + std::to_string(::getpid()) + ": already serving " + v2) != std::string::npos);
}

TEST_CASE("trigger: a publish through another Runtime is picked up; a build hit or a republish of the same key "
          "is not a bump") {
  TriggerStore store;
  const std::string v1 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();

  Runtime other(SwapStore::options(store.dir));
  PublishRequest request;
  request.consumer = "swap";
  request.name = "probe";
  request.artifact_file = KILN_TEST_PLUGIN_SWAP_V2;
  const std::string v2 = other.publish(request).content_key;
  REQUIRE(watched.wait_for(1));
  CHECK(watched.report(0).from_key == v1);
  CHECK(watched.report(0).to_key == v2);
  CHECK(served_version(probe, reader) == 2);

  auto table = swap::GenerationTable::open(store.cache(), {});
  const auto slot = table->slot("swap", "probe");
  REQUIRE(slot);
  const std::uint64_t before = table->poll(*slot).value().generation;
  CHECK(before == 1);  // v2's publish; v1's came before anyone watched
  CHECK(other.publish(request).reused);  // the manifest already names v2: no bump
  CHECK(table->poll(*slot).value().generation == before);
}

TEST_CASE("trigger: kiln swap --to a content key: one only in the store (no manifest names it) and a resident one") {
  TriggerStore store;
  const std::string v1 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string v2 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V2);  // the manifest now names v2 only
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();
  CHECK(served_version(probe, reader) == 2);

  auto result = run_kiln({"swap", "swap", "probe", "--to", v1, "--json", "--wait", "20000"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  json out = json::parse(result.out);
  CHECK(out["content_key"] == v1);
  REQUIRE(out["acknowledged"].size() == 1);
  CHECK(out["acknowledged"][0]["outcome"] == "swapped");
  CHECK(out["acknowledged"][0]["note"] == v1);
  REQUIRE(watched.wait_for(1));
  CHECK_FALSE(watched.report(0).was_resident);
  CHECK(served_version(probe, reader) == 1);

  result = run_kiln({"swap", "swap", "probe", "--to", v2, "--json", "--wait", "20000"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  REQUIRE(watched.wait_for(2));
  CHECK(watched.report(1).was_resident);
  CHECK(served_version(probe, reader) == 2);

  // A key no store holds is refused by kiln swap before anything is asked (exit 3), a
  // malformed one as usage (exit 2).
  result = run_kiln({"swap", "swap", "probe", "--to", std::string(32, 'a'), "--json"}, store.env());
  CHECK(result.exit_code == 3);
  CHECK(json::parse(result.out)["error"]["message"].get<std::string>().find("no entry") != std::string::npos);
  result = run_kiln({"swap", "swap", "probe", "--to", "v1", "--json"}, store.env());
  CHECK(result.exit_code == 2);
  CHECK(json::parse(result.out).contains("error"));
}

TEST_CASE("trigger: a refused version (its self-test fails) is acknowledged as refused with the reason, the old "
          "version still serves, and kiln swap exits with the refusal's code") {
  TriggerStore store;
  const std::string v1 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  const std::string broken = store.publish("probe-broken", KILN_TEST_PLUGIN_SWAP_SELFTEST_FAILS);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();

  auto result = run_kiln({"swap", "swap", "probe", "--to", broken, "--json", "--wait", "20000"}, store.env());
  CHECK(result.exit_code == static_cast<int>(ErrorKind::abi));
  const json out = json::parse(result.out);
  REQUIRE(out["acknowledged"].size() == 1);
  const json &ack = out["acknowledged"][0];
  CHECK(ack["outcome"] == "refused");
  CHECK(ack["exit_code"] == static_cast<int>(ErrorKind::abi));
  const std::string note = ack["note"];
  CHECK_MESSAGE(note.rfind("selftest: ", 0) == 0, note);
  REQUIRE(watched.wait_for(1));
  CHECK(watched.error(0).find("call(8) answered 8005, expected 8004") != std::string::npos);
  CHECK(watched.error(0).find("version " + v1 + " still serves") != std::string::npos);
  CHECK(served_version(probe, reader) == 1);
  CHECK(store.log().find("refused at step selftest") != std::string::npos);

  // A request naming a key that is in no store this process sees (a bump written directly):
  // refused at resolve, not found.
  auto table = swap::GenerationTable::open(store.cache(), {});
  const std::uint64_t generation = table->bump("swap", "probe", std::string(32, 'b'));
  REQUIRE(watched.wait_for(2));
  CHECK(watched.error(1).find("no entry " + std::string(32, 'b')) != std::string::npos);
  const auto acks = table->acknowledgements("swap", "probe");
  REQUIRE(acks.size() == 1);
  CHECK(acks[0].generation == generation);
  CHECK(acks[0].outcome == swap::Outcome::refused);
  CHECK(acks[0].error_kind == static_cast<int>(ErrorKind::not_found));
  CHECK(acks[0].note.rfind("resolve: ", 0) == 0);
  CHECK(served_version(probe, reader) == 1);
}

TEST_CASE("trigger: a damaged or foreign generations file is replaced (logged) and the trigger works") {
  struct Damage {
    const char *what;
    std::function<void(const fs::path &file, const fs::path &outside)> plant;
    const char *logged;
  };
  const Damage damages[] = {
      {"garbage of the right size",
       [](const fs::path &file, const fs::path &outside) {
         write_text(file, std::string(fs::file_size(outside.parent_path() / "good-size"), 'Z'));
       },
       "no kiln generation table (bad magic)"},
      {"wrong size", [](const fs::path &file, const fs::path &) { write_text(file, "kilnGEN1"); }, "8 bytes instead of"},
      {"a symlink", [](const fs::path &file, const fs::path &outside) { fs::create_symlink(outside, file); },
       "a symbolic link"},
      {"a FIFO", [](const fs::path &file, const fs::path &) { REQUIRE(::mkfifo(file.c_str(), 0644) == 0); },
       "not a regular file"},
      {"writable by others",
       [](const fs::path &file, const fs::path &) {
         write_text(file, "x");
         REQUIRE(::chmod(file.c_str(), 0666) == 0);
       },
       "writable by group or others"},
  };
  for (const auto &damage : damages) {
    const std::string what = damage.what;
    CAPTURE(what);
    TriggerStore store;
    store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
    const fs::path outside = store.dir / "outside";
    write_text(outside, "not kiln's");
    // The publish made the table; plant the damage in its place.
    REQUIRE(fs::exists(store.table_file()));
    write_text(store.dir / "good-size", std::string(fs::file_size(store.table_file()), '\0'));
    fs::remove(store.table_file());
    damage.plant(store.table_file(), outside);

    Watched watched;
    SwapProbe probe(store.runtime, watched.options(base_options()));
    CHECK_MESSAGE(store.log().find("is not trusted (" + std::string(damage.logged)) != std::string::npos, store.log());
    struct stat info {};
    REQUIRE(::lstat(store.table_file().c_str(), &info) == 0);
    CHECK(S_ISREG(info.st_mode));
    CHECK((info.st_mode & 0777) == 0644);
    CHECK(read_text(outside) == "not kiln's");  // a symlink's target is never written

    const std::string v2 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V2);
    REQUIRE(watched.wait_for(1));
    CHECK(watched.report(0).to_key == v2);
  }
}

TEST_CASE("trigger: the file truncated in place under a running watcher: no process faults, the file is replaced, "
          "the next publish is served") {
  // What a shared mapping could not survive (SIGBUS on the next access): `> generations` by the
  // same user while a controller watches. Truncated to nothing and to half, each while the
  // watcher polls and the publishing Runtime holds the file open too.
  for (const double keep : {0.0, 0.5}) {
    CAPTURE(keep);
    TriggerStore store;
    store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
    Watched watched;
    SwapProbe probe(store.runtime, watched.options(base_options()));
    SwapReader reader = probe.register_reader();
    CHECK(served_version(probe, reader) == 1);
    const auto size = fs::file_size(store.table_file());
    REQUIRE(::truncate(store.table_file().c_str(), static_cast<off_t>(static_cast<double>(size) * keep)) == 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // several polls of the short file

    const std::string v2 = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V2);
    REQUIRE_MESSAGE(watched.wait_for(1), store.log());
    CHECK(watched.report(0).to_key == v2);
    CHECK(served_version(probe, reader) == 2);
    CHECK(fs::file_size(store.table_file()) == size);  // replaced whole
    CHECK_MESSAGE(store.log().find("is not trusted (") != std::string::npos, store.log());
    // kiln swap works on it and the watcher answers.
    const auto result = run_kiln({"swap", "swap", "probe", "--json", "--wait", "20000"}, store.env());
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    CHECK(json::parse(result.out)["acknowledged"].size() == 1);
  }
}

TEST_CASE("trigger: a full table is logged and harmless: publish works, kiln swap says why, a watcher still serves") {
  TriggerStore store;
  {
    auto table = swap::GenerationTable::open(store.cache(), {});
    for (std::size_t i = 0; i < swap::kSlots; ++i) CHECK(table->bump("fill", "n" + std::to_string(i)) == 1);
    CHECK(table->bump("fill", "one-more") == 0);
    CHECK_FALSE(table->slot("swap", "probe"));
  }
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);  // no error; nobody watches it, so nothing to tell
  CHECK(store.log().find("is full") == std::string::npos);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();
  CHECK(served_version(probe, reader) == 1);
  CHECK(store.log().find("SwapOptions::watch is on but there is no cross-process trigger") != std::string::npos);

  const auto result = run_kiln({"swap", "swap", "probe", "--json"}, store.env());
  CHECK(result.exit_code == 1);
  CHECK(json::parse(result.out)["error"]["message"].get<std::string>().find("is full") != std::string::npos);
}

TEST_CASE("trigger: manifest changes of names no watcher watches write nothing: thousands of them leave the table "
          "to the watched names") {
  TriggerStore store;
  auto table = swap::GenerationTable::open(store.cache(), {});
  for (std::size_t i = 0; i < swap::kSlots + 100; ++i) {
    REQUIRE(table->bump_if_watched("imported", "n" + std::to_string(i)) == 0);
  }
  const auto watched = table->slot("swap", "probe");  // a watcher's claim still finds a free slot
  REQUIRE(watched);
  CHECK(table->poll(*watched).value().generation == 0);
  CHECK(table->bump_if_watched("swap", "probe") == 1);
  CHECK(table->poll(*watched).value().generation == 1);
  // A crowded table (every slot taken) answers an unwatched name too, and a watched one.
  for (std::size_t i = 0; table->bump("fill", "n" + std::to_string(i)) != 0; ++i) {
  }
  CHECK(table->bump_if_watched("imported", "late") == 0);
  CHECK(table->bump_if_watched("swap", "probe") == 2);
}

TEST_CASE("trigger: no writable cache: publish-less runtimes run without the trigger (logged once) and kiln swap "
          "says why") {
  TriggerStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  // A regular file where the table's directory belongs: the trigger cannot exist.
  fs::remove_all(store.dir / "cache" / "swap");
  write_text(store.dir / "cache" / "swap", "in the way");
  Watched watched;
  SwapProbe first(store.runtime, watched.options(base_options()));
  SwapProbe second(store.runtime, watched.options(base_options()));
  const std::string log = store.log();
  const auto said = log.find("no cross-process swap trigger");
  REQUIRE(said != std::string::npos);
  CHECK(log.find("no cross-process swap trigger", said + 1) == std::string::npos);  // once
  SwapReader reader = first.register_reader();
  CHECK(served_version(first, reader) == 1);
  const auto result = run_kiln({"swap", "swap", "probe"}, store.env());
  CHECK(result.exit_code == 1);
  CHECK(result.err.find("not a directory") != std::string::npos);
}

TEST_CASE("trigger: destroying a watching Swappable is prompt even with a long poll interval") {
  TriggerStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  SwapOptions options = base_options();
  options.watch = true;
  options.watch_interval = std::chrono::seconds(30);
  auto probe = std::make_unique<SwapProbe>(store.runtime, options);
  auto table = swap::GenerationTable::open(store.cache(), {});
  CHECK(table->acknowledgements("swap", "probe").size() == 1);  // registered while it watches
  const auto start = Clock::now();
  probe.reset();
  CHECK(Clock::now() - start < std::chrono::seconds(5));  // not the 30 s interval
  CHECK(table->acknowledgements("swap", "probe").empty());  // its record released
}

TEST_CASE("trigger: the table: concurrent bumps from threads and processes all count, the latest request is read, "
          "records of dead processes are left out") {
  TempDir dir;
  auto table = swap::GenerationTable::open((dir / "cache").string(), {});
  const auto slot = table->slot("c", "n");
  REQUIRE(slot);
  CHECK(table->slot("c", "n") == slot);
  CHECK(table->slot("c", "m") != slot);
  CHECK_THROWS_AS(table->slot("c", "../n"), UsageError);
  CHECK_THROWS_AS(table->bump("c", "n", std::string("nothex")), UsageError);

  // Two child processes running `kiln swap` 20 times each, two threads on one table (its
  // mutex), two on their own (each its own open file description: the OFD lock): no bump is
  // lost. The children fork before any thread starts and only exec after that.
  const std::string cli = KILN_CLI_PATH;
  const std::string cache_env = "KILN_CACHE_DIR=" + (dir / "cache").string();
  const char *const argv[] = {cli.c_str(), "swap", "c", "n", nullptr};
  // The loader's path goes along: where the CLI's libraries come from LD_LIBRARY_PATH (a machine
  // the build was carried to), a minimal environment would make every run exit 127.
  const char *library_path = std::getenv("LD_LIBRARY_PATH");
  const std::string library_env = std::string("LD_LIBRARY_PATH=") + (library_path != nullptr ? library_path : "");
  const char *const envp[] = {cache_env.c_str(), "KILN_STORE_PATH=", "KILN_DEVICE=sm_90", library_env.c_str(), nullptr};
  std::vector<pid_t> children;
  for (int c = 0; c < 2; ++c) {
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
      ::dup2(null, 2);
      int failed = 0;
      for (int i = 0; i < 20; ++i) {
        const pid_t swapper = ::fork();
        if (swapper == 0) {
          ::execve(argv[0], const_cast<char *const *>(argv), const_cast<char *const *>(envp));
          ::_exit(127);
        }
        int status = 0;
        if (swapper < 0 || ::waitpid(swapper, &status, 0) != swapper || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
          ++failed;
        }
      }
      ::_exit(failed);
    }
    children.push_back(child);
  }
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      auto mine = t < 2 ? table : swap::GenerationTable::open((dir / "cache").string(), {});
      for (int i = 0; i < 300; ++i) mine->bump("c", "n", i % 2 == 0 ? std::optional<std::string>(std::string(32, 'c')) : std::nullopt);
    });
  }
  for (auto &thread : threads) thread.join();
  for (const pid_t child : children) {
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 0);  // every kiln swap exited 0
  }
  CHECK(table->poll(*slot).value().generation == 1200 + 40);

  const std::string key(32, 'd');
  const std::uint64_t asked = table->bump("c", "n", key);
  swap::Request request = table->poll(*slot).value();
  CHECK(request.generation == asked);
  REQUIRE(request.content_key);
  CHECK(*request.content_key == key);
  table->bump("c", "n");
  request = table->poll(*slot).value();
  CHECK(request.generation == asked + 1);
  CHECK_FALSE(request.content_key);  // a bump without a key asks for what the name resolves to

  const int mine = table->claim_record(*slot, 7);
  REQUIRE(mine >= 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    table->claim_record(*slot, 9);  // no allocation, the child's own lock state: safe after fork
    ::_exit(0);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const auto acks = table->acknowledgements("c", "n");
  REQUIRE(acks.size() == 1);  // the exited child's record is left out
  CHECK(acks[0].pid == ::getpid());
  CHECK(acks[0].generation == 7);
  CHECK(acks[0].outcome == swap::Outcome::watching);
  table->acknowledge(mine, 8, swap::Outcome::refused, 5, std::string(300, 'z'));
  CHECK(table->acknowledgements("c", "n")[0].note == std::string(swap::kNoteBytes, 'z'));
  table->release_record(mine);
  CHECK(table->acknowledgements("c", "n").empty());
  CHECK(table->acknowledgements("c", "never").empty());
}

// In a forked (single-threaded) child: a new pid namespace, as root, else inside a new user
// namespace mapping this uid to 0 there (so the table's owner check still holds). The next
// child forked is pid 1 of it.
bool enter_new_pid_namespace() {
  if (::unshare(CLONE_NEWPID) == 0) return true;
  const uid_t uid = ::getuid();
  if (::unshare(CLONE_NEWUSER | CLONE_NEWPID) != 0) return false;
  const std::string map = "0 " + std::to_string(uid) + " 1";
  const int setgroups = ::open("/proc/self/setgroups", O_WRONLY);
  if (setgroups >= 0) {
    (void)!::write(setgroups, "deny", 4);
    ::close(setgroups);
  }
  const int uid_map = ::open("/proc/self/uid_map", O_WRONLY);
  const bool mapped = uid_map >= 0 && ::write(uid_map, map.data(), map.size()) == static_cast<ssize_t>(map.size());
  if (uid_map >= 0) ::close(uid_map);
  return mapped;
}

// Runs `inner` as pid 1 of a new pid namespace; its exit status, or -1 when none could be made
// (or it did not finish within 20 s, as under an emulator that cannot: then both are killed).
int run_in_new_pid_namespace(const std::function<int()> &inner) {
  const pid_t child = ::fork();
  if (child < 0) return -1;
  if (child == 0) {
    ::setpgid(0, 0);  // one process group with its child, for the kill below
    if (!enter_new_pid_namespace()) ::_exit(200);
    const pid_t first = ::fork();
    if (first == 0) ::_exit(::getpid() == 1 ? inner() : 201);
    int status = 0;
    ::_exit(first > 0 && ::waitpid(first, &status, 0) == first && WIFEXITED(status) ? WEXITSTATUS(status) : 202);
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  pid_t done = 0;
  while ((done = ::waitpid(child, &status, WNOHANG)) == 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (done == 0) {
    ::kill(-child, SIGKILL);
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    return -1;
  }
  if (done != child || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status) >= 200 ? -1 : WEXITSTATUS(status);
}

std::optional<std::string> no_pid_namespace() {
  if (run_in_new_pid_namespace([] { return 0; }) == 0) return std::nullopt;
  return std::string("neither unshare(CLONE_NEWPID) nor a user namespace with one is permitted here");
}

TEST_CASE("trigger: a watcher record of another pid namespace is listed while it is fresh and free once it is "
          "silent past the foreign timeout" * kiln::test::skip_if(no_pid_namespace)) {
  TempDir dir;
  auto table = swap::GenerationTable::open((dir / "cache").string(), {});
  const auto slot = table->slot("c", "n");
  REQUIRE(slot);
  // A process of a new pid namespace (as in another container) claims a record and vanishes
  // without releasing it.
  const std::string cache = (dir / "cache").string();
  const int claimed = run_in_new_pid_namespace([&cache] {
    auto theirs = swap::GenerationTable::open(cache, {});
    const auto their_slot = theirs->slot("c", "n");
    return their_slot && theirs->claim_record(*their_slot, 3) >= 0 ? 0 : 1;
  });
  REQUIRE(claimed == 0);
  auto acks = table->acknowledgements("c", "n");
  REQUIRE(acks.size() == 1);
  CHECK_FALSE(acks[0].same_pid_namespace);
  CHECK(acks[0].pid == 1);  // its own namespace's pid
  CHECK(acks[0].generation == 3);

  // Silent past the timeout: left out of the list, and its record is claimed again once every
  // other one is taken (the table holds 256).
  table->set_foreign_timeout(std::chrono::seconds(0));
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));  // the heartbeat clock counts seconds
  CHECK(table->acknowledgements("c", "n").empty());
  std::vector<int> mine;
  for (std::size_t i = 0; i < swap::kRecords; ++i) mine.push_back(table->claim_record(*slot, 4));
  CHECK(std::count(mine.begin(), mine.end(), -1) == 0);  // the foreign one was free
  CHECK(table->claim_record(*slot, 4) == -1);
  CHECK(table->acknowledgements("c", "n").size() == swap::kRecords);
  for (const int record : mine) {
    CHECK(table->heartbeat(record));
    table->release_record(record);
  }
  CHECK(table->acknowledgements("c", "n").empty());
}

TEST_CASE("trigger: kiln build bumps consumer/name when it changes what the manifest names, not on a hit" *
          kiln::test::skip_if(kiln::test::no_toolchain)) {
  BuildRecipeDir fx;
  const auto generation = [&fx]() -> std::uint64_t {
    auto table = swap::GenerationTable::open(fx.cache().string(), {});
    const auto slot = table->slot("build-tests", "two-units");
    return table->poll(slot.value()).value().generation;
  };
  CHECK(generation() == 0);  // the slot claimed, as a watcher claims it before it first resolves the name
  auto result = run_kiln({"build", fx.recipe_file().string()}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(generation() == 1);
  result = run_kiln({"build", fx.recipe_file().string()}, fx.cli_env());  // a hit: the manifest already names it
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(generation() == 1);
  fx.edit("values.txt", "3", "4");  // another input key and artifact
  result = run_kiln({"build", fx.recipe_file().string()}, fx.cli_env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(generation() == 2);
}

// An unsigned bundle of swap/probe v2, published and exported in another cache under `dir`.
std::string export_probe_v2(const TempDir &dir) {
  const std::map<std::string, std::string> env = {
      {"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_STORE_PATH", ""}, {"KILN_DEVICE", "sm_90"}};
  auto result = run_kiln({"publish", "--consumer", "swap", "--name", "probe", "--artifact", KILN_TEST_PLUGIN_SWAP_V2}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string bundle = (dir / "probe.kbundle").string();
  result = run_kiln({"export", "--consumer", "swap", "-o", bundle}, env);
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  return bundle;
}

TEST_CASE("trigger: kiln import into the writable cache bumps the names it changes, not on a re-import") {
  TempDir other;
  const std::string bundle = export_probe_v2(other);
  CommandResult result;

  TriggerStore store;
  store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();
  CHECK(served_version(probe, reader) == 1);
  result = run_kiln({"import", bundle, "--allow-unsigned"}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  REQUIRE(watched.wait_for(1));
  CHECK(served_version(probe, reader) == 2);
  auto table = swap::GenerationTable::open(store.cache(), {});
  const auto slot = table->slot("swap", "probe");
  const std::uint64_t generation = table->poll(slot.value()).value().generation;
  result = run_kiln({"import", bundle, "--allow-unsigned"}, store.env());  // already present: nothing changes
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  CHECK(table->poll(slot.value()).value().generation == generation);
}

TEST_CASE("trigger: an import killed between its manifest update and its bump still reaches a watcher (once-a-second "
          "look at the manifest); a version pinned by kiln swap --to is left alone") {
  TempDir other;
  const std::string bundle = export_probe_v2(other);
  CommandResult result;

  TriggerStore store;
  const std::string v1_key = store.publish("probe", KILN_TEST_PLUGIN_SWAP_V1);
  Watched watched;
  SwapProbe probe(store.runtime, watched.options(base_options()));
  SwapReader reader = probe.register_reader();
  REQUIRE(served_version(probe, reader) == 1);
  auto table = swap::GenerationTable::open(store.cache(), {});
  const auto slot = table->slot("swap", "probe");
  const std::uint64_t generation = table->poll(slot.value()).value().generation;

  auto env = store.env();
  env["KILN_FAULT"] = "import.after_manifest";
  result = run_kiln({"import", bundle, "--allow-unsigned"}, env);
  REQUIRE_MESSAGE(result.exit_code == 128 + SIGKILL, (std::string("the import was not killed at import.after_manifest: ") + result.err));
  CHECK(table->poll(slot.value()).value().generation == generation);  // the bump never happened
  REQUIRE(watched.wait_for(1));  // within about a second, from the look at the manifest
  CHECK(watched.error(0).empty());
  CHECK(served_version(probe, reader) == 2);

  // Pinned back to v1 by key: the manifest still names v2 and did not change, so it stays.
  result = run_kiln({"swap", "swap", "probe", "--to", v1_key}, store.env());
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  REQUIRE(watched.wait_for(2));
  CHECK(served_version(probe, reader) == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two more looks at the manifest
  CHECK(served_version(probe, reader) == 1);
  {
    std::lock_guard<std::mutex> lock(watched.mutex);
    CHECK(watched.reports.size() == 2);
  }
}

}  // TEST_SUITE
