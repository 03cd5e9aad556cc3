// The control thread's system-call filter, with libseccomp. A forbidden call traps (SIGSYS on that
// thread) rather than killing the process at once, so that the report names the call: the
// handler records its number and parks the thread in clock_nanosleep (allowed) for good; the main
// thread, unfiltered, prints it and dies of SIGSYS, as SECCOMP_RET_KILL_PROCESS would have.
#include "rt/syscall_filter.hpp"

#include <seccomp.h>
#include <signal.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace kiln::test::rt {

namespace {

std::atomic<long> forbidden{-1};
static_assert(std::atomic<long>::is_always_lock_free, "the handler stores without a lock");

void on_sigsys(int, siginfo_t *info, void *) {
  long expected = -1;
  forbidden.compare_exchange_strong(expected, static_cast<long>(info->si_syscall));
  // The thread's cycle must not go on as if the call had been made.
  timespec nap{1, 0};
  for (;;) ::clock_nanosleep(CLOCK_MONOTONIC, 0, &nap, nullptr);
}

}  // namespace

void install_violation_handler() {
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGSYS, &action, nullptr);
}

std::string filter_this_thread(const std::vector<std::string> &allowed) {
  scmp_filter_ctx filter = ::seccomp_init(SCMP_ACT_TRAP);
  if (filter == nullptr) return "seccomp_init failed";
  std::string problem;
  // libseccomp's default: no SECCOMP_FILTER_FLAG_TSYNC; say so, so that no default changes it.
  if (::seccomp_attr_set(filter, SCMP_FLTATR_CTL_TSYNC, 0) != 0) problem = "seccomp_attr_set(TSYNC, 0) failed";
  for (const std::string &name : allowed) {
    const int number = ::seccomp_syscall_resolve_name(name.c_str());
    if (number == __NR_SCMP_ERROR) {
      problem = "no system call " + name;
      break;
    }
    if (const int rc = ::seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0); rc != 0) {
      problem = "seccomp_rule_add(" + name + "): " + std::strerror(-rc);
      break;
    }
  }
  if (problem.empty()) {
    if (const int rc = ::seccomp_load(filter); rc != 0) problem = std::string("seccomp_load: ") + std::strerror(-rc);
  }
  ::seccomp_release(filter);
  return problem;
}

long forbidden_call() noexcept { return forbidden.load(); }

std::string system_call_name(long number) {
  char *name = ::seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, static_cast<int>(number));
  std::string text = (name != nullptr ? std::string(name) : "?") + " (" + std::to_string(number) + ")";
  ::free(name);
  return text;
}

void die_of_sigsys() {
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);
  ::signal(SIGSYS, SIG_DFL);
  ::kill(::getpid(), SIGSYS);
  for (;;) ::pause();
}

}  // namespace kiln::test::rt
