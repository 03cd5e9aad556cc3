// Running a child process (nvcc, a generator, cmake) with its output captured, cancellably.
//
// The child runs in its own process group with stdin on /dev/null and stdout+stderr sent to
// one pipe that this process reads; only fds 0, 1 and 2 reach it (every other descriptor,
// including lock files opened without O_CLOEXEC, is closed in the child). Cancelling kills
// the whole group: the child and everything it started. So does this process's death, even by
// SIGKILL: a watchdog process leads the group and kills it when we are gone (process.cpp says
// how), so a dead host never leaves compiles of several GB running.
#pragma once

#include <signal.h>

#include <string>
#include <utility>
#include <vector>

#include <kiln/cancel.hpp>

namespace kiln::builder {

// A flag that asks running work to stop. cancel() is async-signal-safe and may be called from
// any thread; once set it stays set.
using CancelToken = ::kiln::CancelToken;  // include/kiln/cancel.hpp

struct ProcessSpec {
  // argv[0] is the program: a path when it contains '/' (a relative one is relative to this
  // process's working directory, not to cwd), else looked up in PATH (the PATH of
  // env_overrides when it sets one, else this process's).
  std::vector<std::string> argv;
  std::string cwd;  // empty: this process's working directory
  // Added to (or replacing entries of) this process's environment for the child.
  std::vector<std::pair<std::string, std::string>> env_overrides;
  // When not empty, the child's stdout+stderr are appended to this file (created 0644).
  std::string log_file;
  const CancelToken *cancel = nullptr;  // polled every 20 ms while the child runs
  // > 0: the group is killed as on a cancel once the child ran this long (result.timed_out).
  double timeout_seconds = 0;
};

struct ProcessResult {
  int exit_code = -1;      // the child's exit status; -1 when it died of a signal or never started
  int signal = 0;          // the signal that killed it, 0 when it exited
  bool cancelled = false;  // the token was cancelled: the group was killed (or never started)
  bool timed_out = false;  // ran past spec.timeout_seconds: the group was killed
  double seconds = 0.0;    // wall time from start to the end of the wait
  // stdout+stderr interleaved as written; when longer than output_limit only the last
  // output_limit bytes are kept, after a one-line note saying how much was dropped.
  std::string output;

  bool ok() const noexcept { return !cancelled && signal == 0 && exit_code == 0; }
};

inline constexpr std::size_t output_limit = 64 * 1024;

// Runs the child and waits for it. When the token is already cancelled, starts nothing and
// returns cancelled. On cancel: SIGTERM to the group, SIGKILL 2 s later if any member is still
// there (members that keep the output pipe open count). When the child exits normally,
// background processes it left behind are not killed; their output is read for at most ~1 s.
// Throws UsageError for an empty argv, IoError naming the program when it cannot be found or
// started, when cwd is not a directory, or when the log file cannot be opened or written.
// Thread-safe: several threads may run processes at once.
ProcessResult run_process(const ProcessSpec &spec);

// The executable that `name` denotes: itself when it contains '/' (if it is an executable
// file), else the first executable `dir/name` for dir in the ':'-separated search_path (empty
// entries ignored). Empty when there is none.
std::string find_executable(const std::string &name, const std::string &search_path);

}  // namespace kiln::builder
