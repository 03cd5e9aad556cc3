// Build utilities: child processes (capture, cancel, fd hygiene), job bounds and parallel runs,
// finding and identifying the toolchain.
#include <doctest/doctest.h>

#include <ctime>
#include <fstream>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/jobs.hpp"
#include "builder/backends/nvcc.hpp"
#include "builder/process.hpp"
#include "builder/toolchain.hpp"
#include "files/locks.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"

using namespace kiln;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

builder::ProcessResult sh(const std::string &script, const std::string &log_file = "",
                        const builder::CancelToken *cancel = nullptr) {
  builder::ProcessSpec spec;
  spec.argv = {"sh", "-c", script};
  spec.log_file = log_file;
  spec.cancel = cancel;
  return builder::run_process(spec);
}

std::string message_of(const std::function<void()> &action) {
  try {
    action();
  } catch (const std::exception &error) {
    return error.what();
  }
  return "(no exception)";
}

using kiln::test::contains;

bool wait_for_file(const fs::path &file, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (!fs::exists(file)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Does any live (not zombie) process remain in group `pgid`? kill(-pgid, 0) alone also counts
// zombies, which a container's pid 1 may never reap.
bool group_alive(pid_t pgid) {
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return false;
  for (fs::directory_iterator it("/proc"), end; it != end; ++it) {
    const std::string name = it->path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string stat = kiln::test::read_text(it->path() / "stat");
    const auto close = stat.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0, group = 0;
    if (std::sscanf(stat.c_str() + close + 1, " %c %d %d", &state, &ppid, &group) == 3 && group == pgid &&
        state != 'Z') {
      return true;
    }
  }
  return false;
}

bool group_gone_within(pid_t pgid, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (group_alive(pgid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// Joins a helper thread however the test case leaves its scope.
class Joiner {
 public:
  explicit Joiner(std::thread &thread) : thread_(thread) {}
  ~Joiner() {
    if (thread_.joinable()) thread_.join();
  }
  Joiner(const Joiner &) = delete;
  Joiner &operator=(const Joiner &) = delete;

 private:
  std::thread &thread_;
};

void write_script(const fs::path &file, const std::string &body) {
  kiln::test::write_text(file, "#!/bin/sh\n" + body);
  ::chmod(file.c_str(), 0755);
}

int count_lines(const fs::path &file) {
  if (!fs::exists(file)) return 0;
  const std::string text = kiln::test::read_text(file);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n'));
}

}  // namespace

// ---- process --------------------------------------------------------------------------------

TEST_CASE("process: exit codes, signal deaths, cwd and environment overrides") {
  const auto ok = sh("exit 0");
  CHECK(ok.ok());
  CHECK(ok.exit_code == 0);
  CHECK(ok.signal == 0);
  CHECK_FALSE(ok.cancelled);
  CHECK(ok.seconds >= 0.0);

  const auto three = sh("exit 3");
  CHECK(three.exit_code == 3);
  CHECK(three.signal == 0);
  CHECK_FALSE(three.ok());

  const auto killed = sh("kill -KILL $$");
  CHECK(killed.signal == SIGKILL);
  CHECK(killed.exit_code == -1);
  CHECK_FALSE(killed.cancelled);
  CHECK_FALSE(killed.ok());

  TempDir dir;
  builder::ProcessSpec spec;
  spec.argv = {"sh", "-c", "pwd; echo \"$KILN_TEST_VALUE\"; echo \"$HOME\""};
  spec.cwd = dir.path().string();
  spec.env_overrides = {{"KILN_TEST_VALUE", "first"}, {"KILN_TEST_VALUE", "second"}, {"HOME", "/nowhere"}};
  const auto result = builder::run_process(spec);
  CHECK(result.ok());
  CHECK(result.output == fs::canonical(dir.path()).string() + "\nsecond\n/nowhere\n");

  // The child runs in its own process group (led by its watchdog), with stdin on /dev/null.
  const auto group = sh("read -r pid comm state ppid pgrp rest < /proc/$$/stat; echo $pgrp $$; cat");
  CHECK(group.ok());
  std::istringstream fields(group.output);
  long pgid = 0, pid = 0;
  fields >> pgid >> pid;
  CHECK(pgid > 0);
  CHECK(pgid != static_cast<long>(::getpgrp()));
}

TEST_CASE("process: stdout and stderr go to the log file (appended) and to the result") {
  TempDir dir;
  const std::string log = (dir / "build.log").string();
  const auto first = sh("echo to-out; echo to-err >&2; exit 2", log);
  CHECK(first.exit_code == 2);
  CHECK(contains(first.output, "to-out\n"));
  CHECK(contains(first.output, "to-err\n"));
  const auto second = sh("echo again", log);
  CHECK(second.output == "again\n");
  const std::string logged = kiln::test::read_text(log);
  CHECK(contains(logged, "to-out\n"));
  CHECK(contains(logged, "to-err\n"));
  CHECK(logged.size() == first.output.size() + second.output.size());
  CHECK(logged.substr(logged.size() - 6) == "again\n");

  // Long output: the result keeps the last 64 KiB after a note; the log keeps everything.
  const std::string big_log = (dir / "big.log").string();
  const auto big = sh("i=0; while [ $i -lt 3000 ]; do echo line-$i-0123456789012345678901234567890123456789; "
                      "i=$((i+1)); done; echo last-line",
                      big_log);
  CHECK(big.ok());
  CHECK(big.output.size() <= builder::output_limit + 200);
  CHECK(big.output.size() >= builder::output_limit);
  CHECK(contains(big.output, "earlier bytes of output dropped"));
  CHECK(big.output.substr(big.output.size() - 10) == "last-line\n");
  const std::string full = kiln::test::read_text(big_log);
  CHECK(contains(full, "line-0-"));
  CHECK(full.size() > 3000 * 50);

  CHECK_THROWS_AS(sh("true", (dir / "no-such-dir" / "x.log").string()), IoError);
  CHECK(contains(message_of([&] { sh("true", (dir / "no-such-dir" / "x.log").string()); }), "no-such-dir"));
}

TEST_CASE("process: a missing program, bad cwd or empty argv is an error naming it") {
  builder::ProcessSpec spec;
  spec.argv = {"kiln-no-such-program-xyz", "--flag"};
  CHECK_THROWS_AS(builder::run_process(spec), IoError);
  const std::string on_path = message_of([&] { builder::run_process(spec); });
  CHECK(contains(on_path, "kiln-no-such-program-xyz"));
  CHECK(contains(on_path, "PATH"));

  spec.argv = {"/nonexistent/dir/kiln-tool"};
  CHECK(contains(message_of([&] { builder::run_process(spec); }), "/nonexistent/dir/kiln-tool"));

  TempDir dir;  // a file that is not executable
  kiln::test::write_text(dir / "plain", "data");
  spec.argv = {(dir / "plain").string()};
  CHECK_THROWS_AS(builder::run_process(spec), IoError);

  // PATH comes from the overrides when they set it.
  write_script(dir / "kiln-helper", "echo helped\n");
  spec.argv = {"kiln-helper"};
  spec.env_overrides = {{"PATH", dir.path().string() + ":/usr/bin:/bin"}};
  CHECK(builder::run_process(spec).output == "helped\n");
  spec.env_overrides.clear();

  spec.argv = {"true"};
  spec.cwd = (dir / "missing-dir").string();
  CHECK_THROWS_AS(builder::run_process(spec), IoError);
  CHECK(contains(message_of([&] { builder::run_process(spec); }), "missing-dir"));

  spec.argv.clear();
  spec.cwd.clear();
  CHECK_THROWS_AS(builder::run_process(spec), UsageError);
}

TEST_CASE("process: cancel kills the child and its grandchildren, quickly") {
  TempDir dir;
  const fs::path leader_file = dir / "leader", background_file = dir / "background";
  builder::CancelToken cancel;
  std::atomic<double> cancelled_at{0};
  const auto origin = Clock::now();
  std::thread canceller([&] {
    if (wait_for_file(leader_file, std::chrono::seconds(10))) {
      cancelled_at = std::chrono::duration<double>(Clock::now() - origin).count();
      cancel.cancel();
    }
  });
  Joiner join_canceller(canceller);
  const auto result = sh("sleep 30 & echo $! > " + background_file.string() + "; echo $$ > " +
                             leader_file.string() + ".tmp; mv " + leader_file.string() + ".tmp " +
                             leader_file.string() + "; sleep 30",
                         "", &cancel);
  const double returned_at = std::chrono::duration<double>(Clock::now() - origin).count();
  canceller.join();
  REQUIRE(fs::exists(leader_file));
  CHECK(result.cancelled);
  CHECK_FALSE(result.ok());
  CHECK(result.signal == SIGTERM);
  CHECK(returned_at - cancelled_at < 1.5);  // SIGTERM suffices here: no 2 s SIGKILL wait

  const pid_t pgid = std::stoi(kiln::test::read_text(leader_file));
  const pid_t background = std::stoi(kiln::test::read_text(background_file));
  CHECK(group_gone_within(pgid, std::chrono::seconds(2)));
  const bool background_alive = ::kill(background, 0) == 0 && group_alive(pgid);
  CHECK_FALSE(background_alive);
}

TEST_CASE("process: a child ignoring SIGTERM is SIGKILLed 2 s after cancel; a cancelled token starts nothing") {
  TempDir dir;
  const fs::path ready = dir / "ready";
  builder::CancelToken cancel;
  std::thread canceller([&] {
    if (wait_for_file(ready, std::chrono::seconds(10))) cancel.cancel();
  });
  Joiner join_canceller(canceller);
  const auto started = Clock::now();
  const auto result = sh("trap '' TERM; touch " + ready.string() + "; sleep 30", "", &cancel);
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  canceller.join();
  CHECK(result.cancelled);
  CHECK(result.signal == SIGKILL);
  CHECK(seconds >= 1.9);
  CHECK(seconds < 5.0);

  builder::CancelToken already;
  already.cancel();
  const fs::path marker = dir / "ran";
  const auto skipped = sh("touch " + marker.string(), "", &already);
  CHECK(skipped.cancelled);
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("process: background leftovers do not hang the wait") {
  TempDir dir;
  const fs::path pid_file = dir / "bg";
  const auto started = Clock::now();
  const auto result = sh("sleep 20 & echo $! > " + pid_file.string() + "; echo done");
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  CHECK(result.ok());
  CHECK(result.output == "done\n");
  CHECK(seconds < 1.5);
  if (fs::exists(pid_file)) ::kill(std::stoi(kiln::test::read_text(pid_file)), SIGKILL);
}

TEST_CASE("process: no descriptor of this process leaks into the child (lock files included)") {
  TempDir dir;
  const fs::path lock_file = dir / "held.lock";
  files::FileLock lock(lock_file);  // a lock file held by this process
  const fs::path plain = dir / "plain-fd";
  const int leaky = ::open(plain.c_str(), O_RDWR | O_CREAT, 0644);  // deliberately no O_CLOEXEC
  REQUIRE(leaky >= 0);
  const auto result = sh("for f in /proc/$$/fd/*; do echo \"${f##*/} $(readlink $f)\"; done");
  ::close(leaky);
  CHECK(result.ok());
  CHECK_FALSE(contains(result.output, lock_file.string()));
  CHECK_FALSE(contains(result.output, plain.string()));
  // Only 0, 1 and 2 (and whatever sh opens itself, which is not ours).
  std::istringstream lines(result.output);
  std::string line;
  std::vector<std::string> ours;
  while (std::getline(lines, line)) {
    if (contains(line, dir.path().string())) ours.push_back(line);
  }
  CHECK(ours.empty());
  CHECK(contains(result.output, "0 /dev/null"));
}

TEST_CASE("process: threads run processes at once without waiting on each other's pipes") {
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(6);
  std::vector<double> seconds(6);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    threads.emplace_back([&, i] {
      // Thread 0 runs a long child; the others must not inherit its pipe (or it theirs).
      const auto result = sh(i == 0 ? "sleep 1.5; echo slow" : "sleep 0.2; echo fast-" + std::to_string(i));
      outputs[i] = result.output;
      seconds[i] = result.seconds;
    });
  }
  for (auto &thread : threads) thread.join();
  CHECK(outputs[0] == "slow\n");
  for (std::size_t i = 1; i < outputs.size(); ++i) {
    CHECK(outputs[i] == "fast-" + std::to_string(i) + "\n");
    CHECK(seconds[i] < 1.0);
  }
}

TEST_CASE("process: CancelOnSignals turns SIGINT/SIGTERM into a cancel and restores the old handlers") {
  struct sigaction ignore {}, before_int {}, before_term {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(SIGINT, &ignore, &before_int);
  ::sigaction(SIGTERM, &ignore, &before_term);
  {
    builder::CancelToken outer_token;
    CancelOnSignals outer(outer_token);
    {
      builder::CancelToken token;
      CancelOnSignals guard(token);
      ::raise(SIGINT);
      CHECK(token.cancelled());
      ::raise(SIGINT);  // a second Ctrl-C is harmless
      CHECK(token.cancelled());
      CHECK_FALSE(outer_token.cancelled());
    }
    ::raise(SIGTERM);
    CHECK(outer_token.cancelled());
  }
  struct sigaction now {};
  ::sigaction(SIGINT, nullptr, &now);
  const bool int_restored = now.sa_handler == SIG_IGN;
  ::sigaction(SIGTERM, nullptr, &now);
  const bool term_restored = now.sa_handler == SIG_IGN;
  CHECK(int_restored);
  CHECK(term_restored);
  ::raise(SIGINT);  // ignored again: the test process survives
  ::sigaction(SIGINT, &before_int, nullptr);
  ::sigaction(SIGTERM, &before_term, nullptr);
}

// ---- jobs -----------------------------------------------------------------------------------

TEST_CASE("jobs: bounded_jobs is bounded by request and memory, never below 1") {
  constexpr std::uint64_t GiB = 1ull << 30;
  struct Row {
    unsigned requested;
    std::uint64_t per_unit, available;
    unsigned expected;
  };
  const Row rows[] = {
      {8, 8 * GiB, 64 * GiB, 8},   {8, 8 * GiB, 20 * GiB, 2},   {8, 11 * GiB, 10 * GiB, 1},
      {16, 1 * GiB, 0, 1},         {4, 0, 1, 4},                {0, 1, 100, 1},
      {3, 7 * GiB, 21 * GiB, 3},   {3, 7 * GiB, 21 * GiB - 1, 2},
      {1000, 1, std::numeric_limits<std::uint64_t>::max(), 1000},
  };
  for (const auto &row : rows) {
    CAPTURE(row.requested);
    CAPTURE(row.per_unit);
    CAPTURE(row.available);
    CHECK(builder::bounded_jobs(row.requested, row.per_unit, row.available) == row.expected);
  }
}

TEST_CASE("jobs: KILN_JOBS is a positive integer or refused by name") {
  {
    ScopedEnv jobs("KILN_JOBS", std::nullopt);
    const unsigned cores = builder::default_jobs();
    CHECK(cores >= 1);
    CHECK(cores <= static_cast<unsigned>(::sysconf(_SC_NPROCESSORS_ONLN)));
  }
  {
    ScopedEnv jobs("KILN_JOBS", std::string(""));
    CHECK(builder::default_jobs() >= 1);
  }
  for (const auto &[value, expected] : std::vector<std::pair<std::string, unsigned>>{{"1", 1}, {"4", 4}, {"017", 17}}) {
    ScopedEnv jobs("KILN_JOBS", value);
    CHECK(builder::default_jobs() == expected);
  }
  for (const char *bad : {"0", "-1", "abc", "4x", " 4", "4 ", "+4", "1.5", "99999999999999999999999", "5000"}) {
    CAPTURE(bad);
    ScopedEnv jobs("KILN_JOBS", bad);
    CHECK_THROWS_AS(builder::default_jobs(), UsageError);
    const std::string message = message_of([] { builder::default_jobs(); });
    CHECK(contains(message, "KILN_JOBS"));
    CHECK(contains(message, "'" + std::string(bad) + "'"));
  }
}

TEST_CASE("jobs: available memory from meminfo, lowered by cgroup v2 and v1 limits") {
  const std::uint64_t here = builder::available_memory_bytes();
  CHECK(here > 0);
  CHECK(here < std::numeric_limits<std::uint64_t>::max());

  constexpr std::uint64_t MiB = 1ull << 20;
  TempDir dir;
  builder::MemorySources sources;
  sources.meminfo = dir / "meminfo";
  sources.self_cgroup = dir / "cgroup";
  sources.cgroup_root = dir / "sys";
  kiln::test::write_text(sources.meminfo, "MemTotal:       16000000 kB\nMemAvailable:    8192000 kB\n");

  SUBCASE("no cgroup information: meminfo alone") {
    CHECK(builder::available_memory_bytes(sources) == 8192000ull * 1024);
  }
  SUBCASE("v2: the tightest ancestor, less its non-reclaimable usage") {
    kiln::test::write_text(sources.self_cgroup, "0::/a/b\n");
    fs::create_directories(sources.cgroup_root / "a" / "b");
    kiln::test::write_text(sources.cgroup_root / "a" / "b" / "memory.max", "max\n");
    kiln::test::write_text(sources.cgroup_root / "a" / "memory.max", std::to_string(4096 * MiB) + "\n");
    kiln::test::write_text(sources.cgroup_root / "a" / "memory.current", std::to_string(1024 * MiB) + "\n");
    kiln::test::write_text(sources.cgroup_root / "a" / "memory.stat",
                           "anon 1\nfile 2\ninactive_file " + std::to_string(512 * MiB) + "\nactive_file 9\n");
    CHECK(builder::available_memory_bytes(sources) == 3584 * MiB);
    kiln::test::write_text(sources.cgroup_root / "a" / "b" / "memory.max", std::to_string(1000 * MiB) + "\n");
    CHECK(builder::available_memory_bytes(sources) == 1000 * MiB);
  }
  SUBCASE("v2 in a cgroup namespace: the root's memory.max") {
    kiln::test::write_text(sources.self_cgroup, "0::/\n");
    fs::create_directories(sources.cgroup_root);
    kiln::test::write_text(sources.cgroup_root / "memory.max", std::to_string(2048 * MiB) + "\n");
    CHECK(builder::available_memory_bytes(sources) == 2048 * MiB);
  }
  SUBCASE("v1: memory controller line, unlimited is no bound") {
    kiln::test::write_text(sources.self_cgroup, "5:cpu,cpuacct:/x\n4:memory:/x\n0::/x\n");
    fs::create_directories(sources.cgroup_root / "memory" / "x");
    kiln::test::write_text(sources.cgroup_root / "memory" / "memory.limit_in_bytes", "9223372036854771712\n");
    kiln::test::write_text(sources.cgroup_root / "memory" / "x" / "memory.limit_in_bytes",
                           std::to_string(3000 * MiB) + "\n");
    kiln::test::write_text(sources.cgroup_root / "memory" / "x" / "memory.usage_in_bytes",
                           std::to_string(1000 * MiB) + "\n");
    kiln::test::write_text(sources.cgroup_root / "memory" / "x" / "memory.stat",
                           "inactive_file 1\ntotal_inactive_file " + std::to_string(600 * MiB) + "\n");
    CHECK(builder::available_memory_bytes(sources) == 2600 * MiB);
  }
  SUBCASE("nothing readable") {
    sources.meminfo = dir / "missing";
    CHECK(builder::available_memory_bytes(sources) == std::numeric_limits<std::uint64_t>::max());
  }
}

TEST_CASE("jobs: run_parallel runs every task once with at most `jobs` at once") {
  for (const unsigned jobs : {1u, 2u, 3u, 8u}) {
    CAPTURE(jobs);
    std::atomic<int> active{0}, most{0};
    std::vector<std::atomic<int>> runs(12);
    builder::CancelToken cancel;
    builder::run_parallel(runs.size(), jobs, [&](std::size_t index) {
      const int now = ++active;
      int seen = most.load();
      while (now > seen && !most.compare_exchange_weak(seen, now)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(80));
      ++runs[index];
      --active;
    }, cancel);
    CHECK(most.load() == static_cast<int>(std::min<unsigned>(jobs, 12)));
    for (auto &count : runs) CHECK(count.load() == 1);
    CHECK_FALSE(cancel.cancelled());
  }

  // jobs == 1: in order, on the calling thread.
  std::vector<std::size_t> order;
  builder::CancelToken cancel;
  const auto caller = std::this_thread::get_id();
  bool same_thread = true;
  builder::run_parallel(5, 1, [&](std::size_t index) {
    order.push_back(index);
    same_thread = same_thread && std::this_thread::get_id() == caller;
  }, cancel);
  CHECK(order == std::vector<std::size_t>{0, 1, 2, 3, 4});
  CHECK(same_thread);

  builder::run_parallel(0, 4, [](std::size_t) { FAIL("no task expected"); }, cancel);
}

TEST_CASE("jobs: the first exception cancels, stops new tasks and is rethrown") {
  SUBCASE("jobs 1") {
    builder::CancelToken cancel;
    std::vector<std::size_t> started;
    try {
      builder::run_parallel(10, 1, [&](std::size_t index) {
        started.push_back(index);
        if (index == 3) throw BuildError("unit 3 failed", "log of 3");
      }, cancel);
      FAIL("expected a BuildError");
    } catch (const BuildError &error) {
      CHECK(std::string(error.what()) == "unit 3 failed");
      CHECK(error.log() == "log of 3");
    }
    CHECK(started == std::vector<std::size_t>{0, 1, 2, 3});
    CHECK(cancel.cancelled());
  }
  SUBCASE("jobs 2: the running task finishes, nothing new starts, later errors are dropped") {
    builder::CancelToken cancel;
    std::mutex guard;
    std::vector<std::size_t> started;
    std::atomic<bool> slow_saw_cancel{false};
    try {
      builder::run_parallel(20, 2, [&](std::size_t index) {
        {
          std::lock_guard<std::mutex> lock(guard);
          started.push_back(index);
        }
        if (index == 1) throw std::runtime_error("first");
        // index 0: keeps running until it sees the cancel, then fails too (dropped).
        const auto deadline = Clock::now() + std::chrono::seconds(5);
        while (!cancel.cancelled() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        slow_saw_cancel = cancel.cancelled();
        throw std::runtime_error("second");
      }, cancel);
      FAIL("expected an exception");
    } catch (const std::runtime_error &error) {
      CHECK(std::string(error.what()) == "first");
    }
    CHECK(slow_saw_cancel.load());
    std::sort(started.begin(), started.end());
    CHECK(started == std::vector<std::size_t>{0, 1});
  }
  SUBCASE("a token cancelled from outside starts nothing and returns") {
    builder::CancelToken cancel;
    cancel.cancel();
    int ran = 0;
    builder::run_parallel(5, 2, [&](std::size_t) { ++ran; }, cancel);
    CHECK(ran == 0);
  }
}

// ---- toolchain --------------------------------------------------------------------------------

TEST_CASE("toolchain: find_nvcc honours KILN_NVCC, CUDA_HOME, CUDA_PATH, PATH, then the fallback") {
  TempDir dir;
  write_script(dir / "fake-nvcc", "echo fake\n");
  for (const char *sub : {"home/bin", "cudapath/bin", "onpath", "fallback/bin"}) fs::create_directories(dir / sub);
  for (const char *exe : {"home/bin/nvcc", "cudapath/bin/nvcc", "onpath/nvcc", "fallback/bin/nvcc"}) {
    write_script(dir / exe, "echo fake\n");
  }
  ScopedEnv kiln_nvcc("KILN_NVCC", std::nullopt);
  ScopedEnv cuda_home("CUDA_HOME", std::nullopt);
  ScopedEnv cuda_path("CUDA_PATH", std::nullopt);
  ScopedEnv path("PATH", std::string(""));
  ScopedEnv fallback("KILN_CUDA_FALLBACK_DIR", (dir / "fallback").string());

  CHECK(builder::find_nvcc() == (dir / "fallback/bin/nvcc").string());
  {
    ScopedEnv on_path("PATH", (dir / "empty").string() + ":" + (dir / "onpath").string());
    CHECK(builder::find_nvcc() == (dir / "onpath/nvcc").string());
    ScopedEnv cuda("CUDA_PATH", (dir / "cudapath").string());
    CHECK(builder::find_nvcc() == (dir / "cudapath/bin/nvcc").string());
    ScopedEnv home("CUDA_HOME", (dir / "home").string());
    CHECK(builder::find_nvcc() == (dir / "home/bin/nvcc").string());
    ScopedEnv explicit_nvcc("KILN_NVCC", (dir / "fake-nvcc").string());
    CHECK(builder::find_nvcc() == (dir / "fake-nvcc").string());
  }
  {
    ScopedEnv explicit_nvcc("KILN_NVCC", (dir / "not-there").string());
    CHECK_THROWS_AS(builder::find_nvcc(), NotFoundError);
    const std::string message = message_of([] { builder::find_nvcc(); });
    CHECK(contains(message, "KILN_NVCC"));
    CHECK(contains(message, (dir / "not-there").string()));
  }
}

TEST_CASE("toolchain: no nvcc anywhere is NotFoundError listing the places and the way out") {
  TempDir dir;
  ScopedEnv kiln_nvcc("KILN_NVCC", std::nullopt);
  ScopedEnv cuda_home("CUDA_HOME", (dir / "bogus-cuda").string());
  ScopedEnv cuda_path("CUDA_PATH", std::nullopt);
  ScopedEnv path("PATH", std::string(""));
  ScopedEnv fallback("KILN_CUDA_FALLBACK_DIR", (dir / "no-cuda").string());
  CHECK_THROWS_AS(builder::find_nvcc(), NotFoundError);
  try {
    builder::find_nvcc();
  } catch (const Error &error) {
    CHECK(error.kind() == ErrorKind::not_found);
    const std::string message = error.what();
    CHECK(contains(message, "KILN_NVCC (unset)"));
    CHECK(contains(message, (dir / "bogus-cuda" / "bin" / "nvcc").string()));
    CHECK(contains(message, "CUDA_PATH (unset)"));
    CHECK(contains(message, "PATH"));
    CHECK(contains(message, (dir / "no-cuda" / "bin" / "nvcc").string()));
    CHECK(contains(message, "prepared artifact"));
    CHECK(contains(message, "without a toolchain"));
  }
}

TEST_CASE("toolchain: find_host_compiler honours KILN_HOST_CXX, then CXX, then g++ in PATH") {
  TempDir dir;
  write_script(dir / "my-cxx", "echo cxx\n");
  write_script(dir / "other-cxx", "echo cxx\n");
  ScopedEnv host("KILN_HOST_CXX", std::nullopt);
  ScopedEnv cxx("CXX", std::nullopt);
  {
    ScopedEnv path("PATH", (dir / "nothing").string());
    CHECK_THROWS_AS(builder::find_host_compiler(), NotFoundError);
    CHECK(contains(message_of([] { builder::find_host_compiler(); }), "g++"));
  }
  if (!builder::find_executable("g++", std::getenv("PATH") != nullptr ? std::getenv("PATH") : "").empty()) {
    CHECK(fs::path(builder::find_host_compiler()).filename() == "g++");
  }
  {
    ScopedEnv set_cxx("CXX", (dir / "other-cxx").string());
    CHECK(builder::find_host_compiler() == (dir / "other-cxx").string());
    ScopedEnv set_host("KILN_HOST_CXX", (dir / "my-cxx").string());
    CHECK(builder::find_host_compiler() == (dir / "my-cxx").string());
  }
  {
    ScopedEnv set_cxx("CXX", (dir / "missing-cxx").string());
    CHECK_THROWS_AS(builder::find_host_compiler(), NotFoundError);
    const std::string message = message_of([] { builder::find_host_compiler(); });
    CHECK(contains(message, "CXX="));
    CHECK(contains(message, "missing-cxx"));
  }
}

TEST_CASE("toolchain: identify_toolchain runs --version once, then remembers it on disk and in memory") {
  TempDir dir;
  const fs::path nvcc_count = dir / "nvcc.count", cxx_count = dir / "cxx.count";
  const fs::path nvcc = dir / "bin" / "nvcc-wrapper", cxx = dir / "bin" / "cxx";
  fs::create_directories(dir / "bin");
  // Counts `--version` runs (the identity); the `--list-gpu-code` probe beside it is remembered the same way.
  write_script(nvcc, "[ \"$1\" = --version ] && echo run >> " + nvcc_count.string() +
                         "\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\necho 'Cuda compilation tools, release 13.0'\n"
                         "echo 'Build cuda_13.0.r13.0/compiler.fake_0'\necho\n");
  write_script(cxx, "echo run >> " + cxx_count.string() + "\necho 'g++ (Fake) 12.2.0'\necho 'Copyright'\n");
  fs::create_symlink(nvcc, dir / "nvcc-link");
  ScopedEnv kiln_nvcc("KILN_NVCC", (dir / "nvcc-link").string());
  ScopedEnv host("KILN_HOST_CXX", cxx.string());
  const fs::path cache = dir / "store" / "toolchain.json";  // its directory is created
  builder::reset_toolchain_memo_for_tests();
  // A killed writer's temp a minute old goes with the next write; a fresh one may be a writer's.
  fs::create_directories(cache.parent_path());
  const fs::path dead_temp = cache.parent_path() / ".toolchain.json.tmp-4242-0-1";
  const fs::path fresh_temp = cache.parent_path() / ".toolchain.json.tmp-4243-0-1";
  { std::ofstream(dead_temp.string()) << "{\"entr"; }
  { std::ofstream(fresh_temp.string()) << "{\"entr"; }
  fs::last_write_time(dead_temp, std::time(nullptr) - 3600);

  const auto first = builder::identify_toolchain(cache);
  CHECK_FALSE(fs::exists(dead_temp));
  CHECK(fs::exists(fresh_temp));
  CHECK(first.nvcc_path == fs::canonical(nvcc).string());  // the real path: the symlink resolved
  CHECK(first.nvcc_version == "Build cuda_13.0.r13.0/compiler.fake_0");
  CHECK(first.host_cxx_path == fs::canonical(cxx).string());
  CHECK(first.host_cxx_version == "g++ (Fake) 12.2.0");
  CHECK(first.digest().size() == 32);
  CHECK(count_lines(nvcc_count) == 1);
  CHECK(count_lines(cxx_count) == 1);
  REQUIRE(fs::exists(cache));

  CHECK(builder::identify_toolchain(cache) == first);  // memo
  builder::reset_toolchain_memo_for_tests();
  CHECK(builder::identify_toolchain(cache) == first);  // the file
  CHECK(builder::identify_toolchain(cache).digest() == first.digest());
  CHECK(count_lines(nvcc_count) == 1);
  CHECK(count_lines(cxx_count) == 1);

  // Touching the wrapper (a new mtime) makes it run again; the host compiler stays cached.
  fs::last_write_time(nvcc, fs::last_write_time(nvcc) + 10);
  CHECK(builder::identify_toolchain(cache) == first);
  CHECK(count_lines(nvcc_count) == 2);
  CHECK(count_lines(cxx_count) == 1);
  builder::reset_toolchain_memo_for_tests();
  builder::identify_toolchain(cache);
  CHECK(count_lines(nvcc_count) == 2);

  // A changed toolchain is a different identity.
  write_script(nvcc, "[ \"$1\" = --version ] && echo run >> " + nvcc_count.string() +
                         "\necho 'Build cuda_13.1.r13.1/compiler.fake_1'\n");
  const auto upgraded = builder::identify_toolchain(cache);
  CHECK(count_lines(nvcc_count) == 3);
  CHECK(upgraded.nvcc_version == "Build cuda_13.1.r13.1/compiler.fake_1");
  CHECK(upgraded.digest() != first.digest());

  // A corrupt cache is recomputed and rewritten.
  kiln::test::write_text(cache, "{ not json");
  builder::reset_toolchain_memo_for_tests();
  CHECK(builder::identify_toolchain(cache) == upgraded);
  CHECK(count_lines(nvcc_count) == 4);
  CHECK(count_lines(cxx_count) == 2);
  builder::reset_toolchain_memo_for_tests();
  builder::identify_toolchain(cache);
  CHECK(count_lines(nvcc_count) == 4);
  CHECK(count_lines(cxx_count) == 2);
}

TEST_CASE("toolchain: concurrent first calls identify once; a broken nvcc is a BuildError with its output") {
  TempDir dir;
  const fs::path count = dir / "count";
  write_script(dir / "nvcc", "[ \"$1\" = --version ] && echo run >> " + count.string() +
                                 "\nsleep 0.2\necho 'Build cuda_x'\n");
  write_script(dir / "cxx", "echo 'c++ 1'\n");
  ScopedEnv kiln_nvcc("KILN_NVCC", (dir / "nvcc").string());
  ScopedEnv host("KILN_HOST_CXX", (dir / "cxx").string());
  builder::reset_toolchain_memo_for_tests();
  std::vector<std::thread> threads;
  std::vector<std::string> versions(4);
  for (std::size_t i = 0; i < versions.size(); ++i) {
    threads.emplace_back([&, i] { versions[i] = builder::identify_toolchain(dir / "tc.json").nvcc_version; });
  }
  for (auto &thread : threads) thread.join();
  for (const auto &version : versions) CHECK(version == "Build cuda_x");
  CHECK(count_lines(count) == 1);

  write_script(dir / "broken", "echo 'nvcc: cannot find libnvvm' >&2\nexit 1\n");
  ScopedEnv broken("KILN_NVCC", (dir / "broken").string());
  try {
    builder::identify_toolchain(dir / "tc.json");
    FAIL("expected a BuildError");
  } catch (const BuildError &error) {
    CHECK(contains(error.what(), (dir / "broken").string()));
    CHECK(contains(error.what(), "KILN_NVCC"));
    CHECK(contains(error.log(), "cannot find libnvvm"));
  }
}

TEST_CASE("toolchain: the real nvcc and host compiler of this machine" * kiln::test::skip_if(kiln::test::no_toolchain)) {
  const std::string nvcc = builder::find_nvcc();
  TempDir dir;
  builder::reset_toolchain_memo_for_tests();
  const auto identity = builder::identify_toolchain(dir / "toolchain.json");
  CHECK(identity.nvcc_path == fs::canonical(nvcc).string());
  CHECK(identity.nvcc_version.rfind("Build cuda_", 0) == 0);
  CHECK_FALSE(identity.host_cxx_version.empty());
  // What it can build, from `nvcc --list-gpu-code` (every CUDA 12 and 13 nvcc builds sm_90).
  CHECK(std::find(identity.gpu_codes.begin(), identity.gpu_codes.end(), 90) != identity.gpu_codes.end());
  builder::reset_toolchain_memo_for_tests();
  CHECK(builder::identify_toolchain(dir / "toolchain.json") == identity);  // the list remembered with it
}

TEST_CASE("toolchain: an empty cache path remembers in memory only and writes no file") {
  TempDir dir;
  const fs::path count = dir / "count";
  write_script(dir / "nvcc", "[ \"$1\" = --version ] && echo run >> " + count.string() + "\necho 'Build cuda_mem'\n");
  write_script(dir / "cxx", "echo 'c++ 2'\n");
  ScopedEnv kiln_nvcc("KILN_NVCC", (dir / "nvcc").string());
  ScopedEnv host("KILN_HOST_CXX", (dir / "cxx").string());
  builder::reset_toolchain_memo_for_tests();
  const auto before = std::distance(fs::directory_iterator(fs::current_path()), fs::directory_iterator());
  CHECK(builder::identify_toolchain(fs::path()).nvcc_version == "Build cuda_mem");
  CHECK(builder::identify_toolchain(fs::path()).host_cxx_version == "c++ 2");
  CHECK(count_lines(count) == 1);
  CHECK(std::distance(fs::directory_iterator(fs::current_path()), fs::directory_iterator()) == before);
  CHECK(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()) == 3);
}

TEST_CASE("nvcc link command: static cudart unless the recipe's link flags pick a -cudart= (a host-only plugin)") {
  kiln::Recipe recipe;
  const auto count = [](const std::vector<std::string> &command, const std::string &flag) {
    return std::count(command.begin(), command.end(), flag);
  };
  const std::vector<std::string> plain = kiln::builder::link_command(recipe, {}, {"a.o"});
  CHECK(count(plain, "-cudart=static") == 1);
  recipe.link_flags = {"-cudart=none"};
  const std::vector<std::string> none = kiln::builder::link_command(recipe, {}, {"a.o"});
  CHECK(count(none, "-cudart=static") == 0);
  CHECK(count(none, "-cudart=none") == 1);
  recipe.link_flags = {"--cudart=shared"};
  CHECK(count(kiln::builder::link_command(recipe, {}, {"a.o"}), "-cudart=static") == 0);
}
