// Test helpers for hostile inputs: the CLI under a time limit (a hang fails, it never stalls the
// suite), its --json error checked, and code run as an unprivileged user (chmod 000 binds).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "support/fixtures.hpp"

namespace kiln::test {

// JSON nested 100000 arrays deep: parsers that recurse per level overflow the stack on it.
inline const std::string kDeeplyNestedJson = std::string(100000, '[') + std::string(100000, ']');

// run_kiln under `timeout -s KILL`: a hang ends as exit code 137 after `seconds`.
CommandResult run_kiln_bounded(const std::vector<std::string> &args, const std::map<std::string, std::string> &env,
                               int seconds = 20);

// Checks (doctest CHECKs) that a --json run failed the documented way: the exit code, stdout one
// valid JSON document whose error has that kind and exit code, and a message containing `names`
// (the file or field it is about).
void check_json_error(const CommandResult &result, int exit_code, const std::string &kind, const std::string &names);

// Whether this process can make a file unreadable to code it runs: true when not root (chmod
// 000 binds) or when root can switch a child to uid/gid 65534.
bool can_deny_access();
inline constexpr unsigned kUnprivilegedUid = 65534;

// Runs body in a forked child, as uid/gid 65534 when this process is root (else as itself).
// body returns "" for success or what went wrong; the result is that text, or a description of
// how the child failed (a crash, a hang past 60 s, no privilege switch).
std::string run_unprivileged(const std::function<std::string()> &body);

// Runs body in a forked child with a time limit: "" when it returned "", else why not ("hung",
// a signal, body's text). For library calls that hang or crash on hostile input.
std::string run_in_child(const std::function<std::string()> &body, int seconds = 20);

}  // namespace kiln::test
