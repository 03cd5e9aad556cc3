// kiln_bench_isolation's storms: the GEMM loop of storm_gemm.hpp on a thread of this process
// (inside a GPU partition when given), or in kiln_bench_storm, another process started and
// stopped by the bench.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/placement.hpp>

#include "storm_gemm.hpp"

extern char **environ;

namespace kiln_bench::storm {

namespace storm_fs = boost::filesystem;
using StormClock = std::chrono::steady_clock;

// A storm in this process: a thread running storm::run, inside `partition` when given.
class StreamStorm {
 public:
  StreamStorm(const Config &config, std::shared_ptr<const kiln::GpuPartition> partition)
      : config_(config), partition_(std::move(partition)) {
    config_.current_context = partition_ != nullptr;
    thread_ = std::thread([this] {
      if (partition_) {
        // The storm's stream, buffers and module are the partition's: its GEMMs run on its SMs.
        partition_->run_inside([this] { run(config_, stop_, progress_); });
      } else {
        run(config_, stop_, progress_);
      }
    });
  }
  StreamStorm(const StreamStorm &) = delete;
  StreamStorm &operator=(const StreamStorm &) = delete;
  ~StreamStorm() { stop(); }

  // Waits until the first GEMM completed; the error's words when the storm ended instead.
  std::string wait_running() {
    const auto deadline = StormClock::now() + std::chrono::seconds(60);
    while (!progress_.running.load(std::memory_order_acquire)) {
      if (progress_.finished.load(std::memory_order_acquire)) {
        return "storm: " + (progress_.error.empty() ? std::string("ended before its first GEMM") : progress_.error);
      }
      if (StormClock::now() > deadline) return "storm: no GEMM completed in 60 s";
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return {};
  }
  // Stops and joins; the storm's error, if it had one.
  std::string stop() {
    stop_.store(true);
    if (thread_.joinable()) thread_.join();
    return progress_.error.empty() ? std::string() : "storm: " + progress_.error;
  }
  std::uint64_t launches() const { return progress_.launches.load(); }

 private:
  Config config_;
  std::shared_ptr<const kiln::GpuPartition> partition_;
  std::atomic<bool> stop_{false};
  Progress progress_;
  std::thread thread_;
};

// kiln_bench_storm beside this executable (where the bench was carried with it), else where the
// build made it.
std::string storm_executable() {
  boost::system::error_code ec;
  const storm_fs::path self = storm_fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const storm_fs::path sibling = self.parent_path() / "kiln_bench_storm";
    if (storm_fs::exists(sibling, ec)) return sibling.string();
  }
  return KILN_BENCH_STORM;
}

// A storm in another process: kiln_bench_storm, its stdout a pipe that says "running".
class ProcessStorm {
 public:
  ProcessStorm(const std::string &executable, int device, int gemm, double seconds) {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
    read_fd_ = fds[0];
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    std::vector<std::string> args = {executable,         "--seconds", std::to_string(seconds), "--device",
                                     std::to_string(device), "--gemm",    std::to_string(gemm)};
    std::vector<char *> argv;
    for (auto &a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int error = ::posix_spawn(&pid_, executable.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(fds[1]);
    if (error != 0) {
      pid_ = -1;
      ::close(read_fd_);  // the destructor does not run for a constructor that throws
      throw std::runtime_error("posix_spawn " + executable + ": " + std::strerror(error));
    }
  }
  ProcessStorm(const ProcessStorm &) = delete;
  ProcessStorm &operator=(const ProcessStorm &) = delete;
  ~ProcessStorm() { stop(); }

  std::string wait_running() {
    std::string seen;
    const auto deadline = StormClock::now() + std::chrono::seconds(60);
    while (seen.find("running\n") == std::string::npos) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - StormClock::now()).count();
      if (left <= 0) return "kiln_bench_storm: not running after 60 s";
      pollfd fd{read_fd_, POLLIN, 0};
      if (::poll(&fd, 1, static_cast<int>(left)) <= 0) continue;
      char buffer[256];
      const ssize_t got = ::read(read_fd_, buffer, sizeof buffer);
      if (got <= 0) return "kiln_bench_storm ended before it ran (" + stop() + ")";
      seen.append(buffer, static_cast<std::size_t>(got));
    }
    return {};
  }
  // Kills it (SIGTERM: it stops its GEMMs and exits) and reaps it; how it ended, in words.
  std::string stop() {
    if (read_fd_ >= 0) {
      ::close(read_fd_);
      read_fd_ = -1;
    }
    if (pid_ <= 0) return ended_;
    ::kill(pid_, SIGTERM);
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    if (WIFEXITED(status)) ended_ = "exit status " + std::to_string(WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) ended_ = std::string("signal ") + ::strsignal(WTERMSIG(status));
    return ended_;
  }

 private:
  pid_t pid_ = -1;
  int read_fd_ = -1;
  std::string ended_;
};

}  // namespace kiln_bench::storm
