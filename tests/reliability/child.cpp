#include "reliability/child.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <boost/filesystem/operations.hpp>

extern char **environ;

namespace kiln::reliability {
namespace {

std::string slurp(const fs::path &file) {
  std::ifstream in(file.string(), std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::atomic<unsigned long> &child_counter() {
  static std::atomic<unsigned long> counter{0};
  return counter;
}

// The pids whose parent is this process (from /proc/<pid>/stat: "pid (comm) state ppid ...").
std::vector<pid_t> children_of_self() {
  std::vector<pid_t> found;
  const pid_t self = ::getpid();
  DIR *proc = ::opendir("/proc");
  if (proc == nullptr) return found;
  while (const dirent *item = ::readdir(proc)) {
    char *end = nullptr;
    const long pid = std::strtol(item->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    std::ifstream stat("/proc/" + std::string(item->d_name) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const std::size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 2));
    char state = 0;
    long ppid = 0;
    rest >> state >> ppid;
    if (ppid == self) found.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return found;
}

}  // namespace

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::string Outcome::describe() const {
  if (signal != 0) return "killed by signal " + std::to_string(signal);
  std::string text = "exit " + std::to_string(exit_code);
  if (!err.empty()) text += ": " + err.substr(0, 2000);
  return text;
}

Child::Child(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
             const fs::path &scratch) {
  const unsigned long serial = child_counter()++;
  out_ = scratch / ("child-" + std::to_string(::getpid()) + "-" + std::to_string(serial) + ".out");
  err_ = scratch / ("child-" + std::to_string(::getpid()) + "-" + std::to_string(serial) + ".err");

  std::vector<std::string> environment;
  for (char **item = environ; *item != nullptr; ++item) {
    const std::string entry(*item);
    const std::string name = entry.substr(0, entry.find('='));
    if (env.count(name) == 0) environment.push_back(entry);
  }
  for (const auto &[name, value] : env) environment.push_back(name + "=" + value);
  std::vector<char *> envp, args;
  for (auto &entry : environment) envp.push_back(entry.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto &arg : argv_copy) args.push_back(arg.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  started_ = now_seconds();
  const int failed = ::posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (failed != 0) throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(failed));
}

Child::~Child() {
  if (!done_) {
    kill();
    wait();
  }
}

Outcome Child::collect(int status) {
  done_ = true;
  outcome_.seconds = now_seconds() - started_;
  if (WIFEXITED(status)) outcome_.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) outcome_.signal = WTERMSIG(status);
  outcome_.out = slurp(out_);
  outcome_.err = slurp(err_);
  boost::system::error_code ignored;
  fs::remove(out_, ignored);
  fs::remove(err_, ignored);
  return outcome_;
}

bool Child::exited() {
  if (done_) return true;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got == pid_) collect(status);
  return done_;
}

void Child::kill() {
  if (!done_) ::kill(pid_, SIGKILL);  // an exited but unreaped child is a zombie: no harm
}

Outcome Child::wait() {
  if (done_) return outcome_;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) throw std::runtime_error(std::string("waitpid: ") + std::strerror(errno));
  }
  return collect(status);
}

Outcome run(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
            const fs::path &scratch) {
  Child child(argv, env, scratch);
  return child.wait();
}

OrphanReaper::OrphanReaper() { ::prctl(PR_SET_CHILD_SUBREAPER, 1); }

OrphanReaper::~OrphanReaper() {
  end_orphans();
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

int OrphanReaper::end_orphans() {
  int ended = 0;
  for (;;) {
    const std::vector<pid_t> children = children_of_self();
    if (children.empty()) break;
    for (const pid_t pid : children) {
      ::kill(pid, SIGKILL);
      // Its own children are re-parented to us when it dies: the next pass finds them.
      if (::waitpid(pid, nullptr, 0) == pid) ++ended;
    }
  }
  return ended;
}

}  // namespace kiln::reliability
