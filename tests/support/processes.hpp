// Watching processes a test did not start itself (a compiler a build spawned, its children):
// whether one still runs (waiting for one to end: checks.hpp's eventually).
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

namespace kiln::test {

// A process as first seen: its pid and start time (so that a later reuse of the pid is not it).
struct Seen {
  pid_t pid = 0;
  std::string started;
};

// Field 22 of /proc/<pid>/stat and the state letter; empty when there is no such process.
std::pair<char, std::string> state_and_start(pid_t pid);

// The process with this pid, as it is now.
inline Seen seen(pid_t pid) { return {pid, state_and_start(pid).second}; }

// The parent's pid (field 4 of /proc/<pid>/stat); 0 when there is no such process.
pid_t parent_of(pid_t pid);
// /proc/<pid>/comm: "cmake", "make", "sh"; empty when there is no such process.
std::string command_name(pid_t pid);
// `pid` and its ancestors below `top` (the process that started the chain), as seen now.
std::vector<Seen> lineage(pid_t pid, pid_t top);

// Still running code: exists, is not a zombie (killed, not yet reaped by whoever adopted it)
// and is the same process as first seen.
bool running(const Seen &seen);

}  // namespace kiln::test
