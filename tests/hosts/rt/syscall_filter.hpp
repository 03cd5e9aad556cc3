// A seccomp filter on the calling thread alone: every system call but the allowed ones stops the
// thread for good and is reported, and the process then dies of SIGSYS (syscall_filter.cpp).
#pragma once

#include <string>
#include <vector>

namespace kiln::test::rt {

// What a control loop itself needs: sleeping to its next deadline and reading the clock (a vDSO
// call that makes no system call where the kernel's clock source allows; allowed for the ones
// that fall back to the kernel).
inline const std::vector<std::string> kLoopSystemCalls = {"clock_nanosleep", "clock_gettime"};

// Installs the SIGSYS handler (process-wide; call before starting threads).
void install_violation_handler();

// Loads a filter allowing `allowed` on the calling thread only (no SECCOMP_FILTER_FLAG_TSYNC:
// other threads keep theirs). Returns "" when loaded, else why not.
std::string filter_this_thread(const std::vector<std::string> &allowed);

// The number of the first forbidden system call made by a filtered thread; -1: none yet.
long forbidden_call() noexcept;
// "getppid (110)".
std::string system_call_name(long number);

// Dies as the filter's verdict: SIGSYS, without a core file.
[[noreturn]] void die_of_sigsys();

}  // namespace kiln::test::rt
