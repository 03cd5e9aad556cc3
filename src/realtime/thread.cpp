// The control thread's CPU and scheduling: pinned to one CPU, SCHED_FIFO.
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include <cerrno>

#include <kiln/realtime.hpp>

#include "realtime/refusal.hpp"

namespace kiln::realtime {

std::vector<int> allowed_cpus() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::pthread_getaffinity_np(::pthread_self(), sizeof set, &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

Step pin_thread(int cpu) {
  const std::string what = "pin to CPU " + std::to_string(cpu);
  const std::vector<int> allowed = allowed_cpus();
  std::string list;
  for (int c : allowed) list += (list.empty() ? "" : ",") + std::to_string(c);
  if (cpu < 0 || cpu >= CPU_SETSIZE) return detail::refused(what, EINVAL, "allowed CPUs: " + list);
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  const int error = ::pthread_setaffinity_np(::pthread_self(), sizeof set, &set);
  if (error != 0) return detail::refused(what, error, "allowed CPUs: " + list);
  return detail::done(what, "");
}

Step set_fifo(int priority) {
  const std::string what = "SCHED_FIFO " + std::to_string(priority);
  const int low = ::sched_get_priority_min(SCHED_FIFO), high = ::sched_get_priority_max(SCHED_FIFO);
  if (priority < low || priority > high) {
    return detail::refused(what, EINVAL, "priorities run " + std::to_string(low) + ".." + std::to_string(high));
  }
  sched_param param{};
  param.sched_priority = priority;
  const int error = ::pthread_setschedparam(::pthread_self(), SCHED_FIFO, &param);
  if (error == 0) return detail::done(what, "");
  std::string fix = "needs CAP_SYS_NICE or an RLIMIT_RTPRIO of at least the priority";
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_RTPRIO, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    fix += "; RLIMIT_RTPRIO is " + std::to_string(limit.rlim_cur) + " (ulimit -r, limits.conf rtprio)";
  }
  return detail::refused(what, error, fix);
}

}  // namespace kiln::realtime
