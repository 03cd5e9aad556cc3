#include "builder/process.hpp"
#include "files/unique_fd.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <kiln/errors.hpp>

extern char **environ;  // NOLINT: POSIX

namespace kiln::builder {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr milliseconds poll_interval{20};
constexpr milliseconds kill_grace{2000};        // SIGTERM → SIGKILL
constexpr milliseconds drain_after_exit{1000};  // output of leftovers after a normal exit
constexpr milliseconds drain_idle{100};

// ---- small helpers ---------------------------------------------------------------------

using Fd = files::UniqueFd;

// Moves a CLOEXEC descriptor above 2 so that the child's dup2 onto 0/1/2 never clobbers it
// (possible when this process was started with a standard stream closed).
int above_std(int fd) {
  if (fd > 2) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 3);
  const int error = errno;
  ::close(fd);
  errno = error;
  return moved;
}

bool is_executable_file(const std::string &path) {
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode) && ::access(path.c_str(), X_OK) == 0;
}

std::string quoted(const std::string &text) { return "'" + text + "'"; }

std::string search_path_for(const ProcessSpec &spec) {
  for (auto it = spec.env_overrides.rbegin(); it != spec.env_overrides.rend(); ++it) {
    if (it->first == "PATH") return it->second;
  }
  if (const char *path = ::secure_getenv("PATH")) return path;
  return "/usr/local/bin:/usr/bin:/bin";
}

std::vector<std::string> child_environment(const ProcessSpec &spec) {
  std::vector<std::string> entries;
  for (char **entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    const std::string text = *entry;
    const std::string name = text.substr(0, text.find('='));
    bool overridden = false;
    for (const auto &override_entry : spec.env_overrides) overridden = overridden || override_entry.first == name;
    if (!overridden) entries.push_back(text);
  }
  for (const auto &[name, value] : spec.env_overrides) {
    bool seen = false;  // the last override of a name wins
    for (auto &entry : entries) {
      if (entry.compare(0, name.size() + 1, name + "=") == 0) {
        entry = name + "=" + value;
        seen = true;
      }
    }
    if (!seen) entries.push_back(name + "=" + value);
  }
  return entries;
}

// 0, or the errno of the failed write.
int write_all(int fd, const char *data, std::size_t size) {
  while (size > 0) {
    const ssize_t put = ::write(fd, data, size);
    if (put < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    data += put;
    size -= static_cast<std::size_t>(put);
  }
  return 0;
}

// A relative program path is relative to this process's directory, not to spec.cwd.
std::string absolute(const std::string &path) {
  if (path.empty() || path.front() == '/') return path;
  std::vector<char> buffer(4096);
  while (::getcwd(buffer.data(), buffer.size()) == nullptr) {
    if (errno != ERANGE) return path;
    buffer.resize(buffer.size() * 2);
  }
  return std::string(buffer.data()) + "/" + path;
}

// Keeps the last output_limit bytes of a stream, counting what it drops.
class Tail {
 public:
  void append(const char *data, std::size_t size) {
    text_.append(data, size);
    if (text_.size() > 2 * output_limit) trim();
  }
  std::string finish() {
    trim();
    if (dropped_ == 0) return std::move(text_);
    return "[kiln: " + std::to_string(dropped_) + " earlier bytes of output dropped; the log file has all]\n" + text_;
  }

 private:
  void trim() {
    if (text_.size() <= output_limit) return;
    const std::size_t extra = text_.size() - output_limit;
    dropped_ += extra;
    text_.erase(0, extra);
  }
  std::string text_;
  std::size_t dropped_ = 0;
};

class SpawnResources {
 public:
  SpawnResources() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnResources() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
  SpawnResources(const SpawnResources &) = delete;
  SpawnResources &operator=(const SpawnResources &) = delete;
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
};

void check_spawn_call(int rc, const char *what) {
  if (rc != 0) throw IoError(std::string("cannot prepare a child process (") + what + "): " + std::strerror(rc));
}

// Every process kiln spawns (the watchdog and the compilers it guards) starts in process group
// `group` (0: a new one it leads), with no signal blocked and every signal at its default
// action, whatever the host's threads had set; and with only descriptors 0-2, so that no lock
// or pipe of the host reaches it.
void set_child_basics(SpawnResources &spawn, pid_t group) {
  check_spawn_call(posix_spawn_file_actions_addclosefrom_np(&spawn.actions, 3), "close fds");
  sigset_t no_signals;
  sigemptyset(&no_signals);
  sigset_t all_signals;
  sigfillset(&all_signals);
  check_spawn_call(posix_spawnattr_setflags(&spawn.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                             POSIX_SPAWN_SETSIGDEF),
                   "flags");
  check_spawn_call(posix_spawnattr_setpgroup(&spawn.attr, group), "process group");
  check_spawn_call(posix_spawnattr_setsigmask(&spawn.attr, &no_signals), "signal mask");
  check_spawn_call(posix_spawnattr_setsigdefault(&spawn.attr, &all_signals), "signal dispositions");
}

// Has the child exited? Observed without reaping it (its status is read once, at the end).
bool child_exited(pid_t pid) {
  siginfo_t info{};
  for (;;) {
    if (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0) return info.si_pid == pid;
    if (errno != EINTR) return true;  // ECHILD: someone else reaped it (SIGCHLD ignored)
  }
}

int reap(pid_t pid) {
  int status = 0;
  for (;;) {
    if (::waitpid(pid, &status, 0) == pid) return status;
    if (errno != EINTR) return -1;
  }
}

// ---- the watchdog ------------------------------------------------------------------------
//
// Leads the process group the child then joins, and SIGKILLs that group (itself included) the
// moment this process dies, however it dies: it blocks reading a pipe whose only write end is
// ours (O_CLOEXEC, and every child gets only fds 0-2), and the kernel closes that end when we
// exit or are killed, so its read returns EOF. nvcc's own children (cicc, ptxas, gcc) are in the
// group too. It ignores SIGTERM, so a cancel's SIGTERM to the group leaves it there to finish
// the job if we die during the grace period. It is a shell started with posix_spawn: no fork of
// the host (whose page tables may span GBs, whose pthread_atfork handlers we do not control,
// where a forked child could only make async-signal-safe calls), and no dependency on the
// forking thread as PR_SET_PDEATHSIG would have (it fires when that *thread* exits, and reaches
// only the direct child). While it lives, unreaped, its pid, the group's id, cannot be reused,
// so signalling the group can never hit a stranger. (A host that forks without exec while we
// run keeps a copy of our write end: the watchdog then fires when that copy closes too.)
constexpr const char *watchdog_shell = "/bin/sh";
constexpr const char *watchdog_script = "trap '' HUP INT QUIT TERM; read -r _; kill -s KILL 0";

class Watchdog {
 public:
  Watchdog() {
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
    Fd read_end(above_std(pipe_fds[0]));
    alive_.reset(above_std(pipe_fds[1]));
    if (read_end.get() < 0 || alive_.get() < 0) throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
    SpawnResources spawn;
    check_spawn_call(posix_spawn_file_actions_adddup2(&spawn.actions, read_end.get(), 0), "watchdog stdin");
    check_spawn_call(posix_spawn_file_actions_addopen(&spawn.actions, 1, "/dev/null", O_WRONLY, 0), "watchdog stdout");
    check_spawn_call(posix_spawn_file_actions_addopen(&spawn.actions, 2, "/dev/null", O_WRONLY, 0), "watchdog stderr");
    set_child_basics(spawn, 0);
    char arg0[] = "kiln-watchdog", arg1[] = "-c";
    std::string script = watchdog_script;
    char *argv[] = {arg0, arg1, script.data(), nullptr};
    char path[] = "PATH=/usr/bin:/bin";
    char *envp[] = {path, nullptr};
    const int error = ::posix_spawn(&pid_, watchdog_shell, &spawn.actions, &spawn.attr, argv, envp);
    if (error != 0) {
      throw IoError(std::string("cannot start ") + watchdog_shell + ", the watchdog that stops a compile if this "
                    "process dies: " + std::strerror(error) + " (kiln needs a POSIX shell at " + watchdog_shell + ")");
    }
  }
  ~Watchdog() {
    ::kill(pid_, SIGKILL);  // it alone: a normally finished child's leftovers are left running
    reap(pid_);
  }
  Watchdog(const Watchdog &) = delete;
  Watchdog &operator=(const Watchdog &) = delete;

  pid_t group() const { return pid_; }

 private:
  Fd alive_;  // the only write end of the watchdog's pipe
  pid_t pid_ = -1;
};

}  // namespace

// ---- run_process ----------------------------------------------------------------------

std::string find_executable(const std::string &name, const std::string &search_path) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) return is_executable_file(name) ? name : "";
  std::size_t start = 0;
  while (start <= search_path.size()) {
    const std::size_t end = std::min(search_path.find(':', start), search_path.size());
    const std::string dir = search_path.substr(start, end - start);
    if (!dir.empty()) {
      const std::string candidate = dir + (dir.back() == '/' ? "" : "/") + name;
      if (is_executable_file(candidate)) return candidate;
    }
    start = end + 1;
  }
  return "";
}

ProcessResult run_process(const ProcessSpec &spec) {
  if (spec.argv.empty() || spec.argv.front().empty()) {
    throw UsageError("run_process: empty command line (argv[0] must name the program to run)");
  }
  const std::string &program = spec.argv.front();
  ProcessResult result;
  if (spec.cancel != nullptr && spec.cancel->cancelled()) {
    result.cancelled = true;
    return result;
  }

  const std::string search_path = search_path_for(spec);
  const std::string executable = absolute(find_executable(program, search_path));
  if (executable.empty()) {
    if (program.find('/') != std::string::npos) {
      throw IoError("cannot run " + quoted(program) + ": no executable file there (check the path, or install it)");
    }
    throw IoError("cannot run " + quoted(program) + ": not found in PATH (" + search_path +
                  "); install it or name it by absolute path");
  }
  if (!spec.cwd.empty()) {
    struct stat info {};
    if (::stat(spec.cwd.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
      throw IoError("cannot run " + quoted(program) + " in " + quoted(spec.cwd) + ": not a directory");
    }
  }

  Fd log;
  if (!spec.log_file.empty()) {
    log.reset(::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (log.get() < 0) {
      throw IoError("cannot open log file " + quoted(spec.log_file) + ": " + std::strerror(errno) +
                    " (check that its directory exists and is writable)");
    }
  }

  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  Fd read_end(above_std(pipe_fds[0]));
  Fd write_end(above_std(pipe_fds[1]));
  if (read_end.get() < 0 || write_end.get() < 0) {
    throw IoError(std::string("cannot create a pipe: ") + std::strerror(errno));
  }

  std::vector<std::string> env_strings = child_environment(spec);
  std::vector<char *> envp;
  envp.reserve(env_strings.size() + 1);
  for (auto &entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = spec.argv;
  std::vector<char *> argv;
  argv.reserve(argv_strings.size() + 1);
  for (auto &arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  const Watchdog watchdog;
  const pid_t group = watchdog.group();
  SpawnResources spawn;
  check_spawn_call(posix_spawn_file_actions_addopen(&spawn.actions, 0, "/dev/null", O_RDONLY, 0), "stdin");
  check_spawn_call(posix_spawn_file_actions_adddup2(&spawn.actions, write_end.get(), 1), "stdout");
  check_spawn_call(posix_spawn_file_actions_adddup2(&spawn.actions, write_end.get(), 2), "stderr");
  if (!spec.cwd.empty()) {
    check_spawn_call(posix_spawn_file_actions_addchdir_np(&spawn.actions, spec.cwd.c_str()), "cwd");
  }
  // Descriptors other libraries opened without O_CLOEXEC must not reach the child either: a
  // leaked lock descriptor would keep a lock alive past its holder.
  set_child_basics(spawn, group);

  const auto started = Clock::now();
  pid_t pid = -1;
  const int spawn_error =
      ::posix_spawn(&pid, executable.c_str(), &spawn.actions, &spawn.attr, argv.data(), envp.data());
  if (spawn_error != 0) {
    std::string fix = " (check that it is an executable for this machine)";
    if (spawn_error == ENOENT && !spec.cwd.empty()) fix = " (check it and the working directory " + spec.cwd + ")";
    if (spawn_error == EACCES) fix = " (check its permissions and those of its directories)";
    if (spawn_error == ENOEXEC) fix = " (not a binary and no #! line: add one, or run it through its interpreter)";
    throw IoError("cannot run " + quoted(program) + " (" + executable + "): " + std::strerror(spawn_error) + fix);
  }
  write_end.reset();  // the child holds the only write end now: EOF once its group closes it

  Tail tail;
  int log_error = 0;
  bool cancel_sent = false;
  bool kill_sent = false;
  Clock::time_point term_time{};
  Clock::time_point exit_time{};
  Clock::time_point last_data{};
  bool exited = false;
  bool pipe_open = true;
  std::vector<char> buffer(64 * 1024);

  try {
    for (;;) {
      const auto now = Clock::now();
      const bool timed_out = spec.timeout_seconds > 0 &&
                             std::chrono::duration<double>(now - started).count() >= spec.timeout_seconds;
      if (!cancel_sent && ((spec.cancel != nullptr && spec.cancel->cancelled()) || timed_out)) {
        cancel_sent = true;
        result.timed_out = timed_out;
        term_time = now;
        ::kill(-group, SIGTERM);
      }
      if (cancel_sent && !kill_sent && now - term_time >= kill_grace) {
        kill_sent = true;
        ::kill(-group, SIGKILL);
      }
      if (!exited && child_exited(pid)) {
        exited = true;
        exit_time = now;
        last_data = now;
      }
      if (exited) {
        if (!pipe_open) {
          // Cancelled: the child is gone and nothing holds its output; whatever of its group
          // ignored SIGTERM does not get the grace the child had.
          if (cancel_sent && !kill_sent) ::kill(-group, SIGKILL);
          break;
        }
        if (cancel_sent) {
          if (kill_sent) break;
        } else if (now - exit_time >= drain_after_exit || now - last_data >= drain_idle) {
          break;  // background leftovers keep the pipe open: stop listening to them
        }
      }

      if (!pipe_open) {
        std::this_thread::sleep_for(milliseconds(exited ? 0 : 5));
        continue;
      }
      pollfd watch{read_end.get(), POLLIN, 0};
      const int ready = ::poll(&watch, 1, static_cast<int>(poll_interval.count()));
      if (ready < 0 && errno != EINTR) throw IoError(std::string("cannot wait for a child: ") + std::strerror(errno));
      if (ready <= 0) continue;
      const ssize_t got = ::read(read_end.get(), buffer.data(), buffer.size());
      if (got < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        pipe_open = false;
        continue;
      }
      if (got == 0) {
        pipe_open = false;
        continue;
      }
      last_data = Clock::now();
      const auto size = static_cast<std::size_t>(got);
      tail.append(buffer.data(), size);
      // On a write error keep reading, so that the child is not blocked; reported below.
      if (log.get() >= 0 && log_error == 0) log_error = write_all(log.get(), buffer.data(), size);
    }
  } catch (...) {
    ::kill(-group, SIGKILL);
    reap(pid);
    throw;
  }

  const int status = reap(pid);
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();
  result.cancelled = cancel_sent && !result.timed_out;
  if (status != -1 && WIFEXITED(status)) {
    result.exit_code = WEXITSTATUS(status);
  } else if (status != -1 && WIFSIGNALED(status)) {
    result.signal = WTERMSIG(status);
  }
  result.output = tail.finish();
  if (log_error != 0) {
    throw IoError("cannot write log file " + quoted(spec.log_file) + " while running " + quoted(program) + ": " +
                  std::strerror(log_error) + (log_error == ENOSPC ? " (the disk is full: free space and retry)" : ""));
  }
  if (log.get() >= 0 && ::close(log.release()) != 0) {
    throw IoError("cannot write log file " + quoted(spec.log_file) + ": " + std::strerror(errno));
  }
  return result;
}

}  // namespace kiln::builder
