#include "support/hostile.hpp"

#include <signal.h>
#include <grp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

namespace kiln::test {
namespace {

// Waits for `child` at most `seconds`, then kills it. Returns its wait status, or -1 when killed.
int wait_bounded(pid_t child, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) return status;
    if (done < 0 && errno != EINTR) return -2;
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// fork, run body (optionally after dropping to `uid`), report through a pipe.
std::string run_forked(const std::function<std::string()> &body, int seconds, bool drop) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) return "pipe failed";
  const pid_t child = ::fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    ::close(pipe_fds[0]);
    std::string outcome;
    if (drop && ::geteuid() == 0 &&
        (::setgroups(0, nullptr) != 0 || ::setgid(kUnprivilegedUid) != 0 || ::setuid(kUnprivilegedUid) != 0)) {
      outcome = std::string("cannot switch to uid 65534: ") + std::strerror(errno);
    } else {
      try {
        outcome = body();
      } catch (const std::exception &error) {
        outcome = std::string("unexpected exception: ") + error.what();
      } catch (...) {
        outcome = "unexpected exception of unknown type";
      }
    }
    const ssize_t ignored = ::write(pipe_fds[1], outcome.data(), outcome.size());
    (void)ignored;
    ::_exit(0);  // no atexit handlers, no doctest teardown in the child
  }
  ::close(pipe_fds[1]);
  const int status = wait_bounded(child, seconds);
  std::string outcome;
  char buffer[4096];
  for (ssize_t got; (got = ::read(pipe_fds[0], buffer, sizeof buffer)) > 0;) outcome.append(buffer, static_cast<std::size_t>(got));
  ::close(pipe_fds[0]);
  if (status == -1) return "hung: killed after " + std::to_string(seconds) + " s" + (outcome.empty() ? "" : " (" + outcome + ")");
  if (status < 0) return "waitpid failed";
  if (WIFSIGNALED(status)) return "crashed with signal " + std::to_string(WTERMSIG(status));
  return outcome;
}

}  // namespace

CommandResult run_kiln_bounded(const std::vector<std::string> &args, const std::map<std::string, std::string> &env,
                               int seconds) {
  std::string command = "timeout -s KILL " + std::to_string(seconds) + " env";
  for (const auto &[name, value] : env) command += " " + shell_quote(name + "=" + value);
  command += " " + shell_quote(KILN_CLI_PATH);
  for (const auto &arg : args) command += " " + shell_quote(arg);
  return run_shell(command);
}

void check_json_error(const CommandResult &result, int exit_code, const std::string &kind, const std::string &names) {
  INFO("stdout: " << result.out);
  INFO("stderr: " << result.err);
  CHECK(result.exit_code == exit_code);
  nlohmann::json out;
  bool valid = true;
  try {
    out = nlohmann::json::parse(result.out);
  } catch (const nlohmann::json::exception &) {
    valid = false;
  }
  REQUIRE_MESSAGE(valid, "stdout is not one valid JSON document");
  REQUIRE(out.contains("error"));
  CHECK(out["error"]["kind"] == kind);
  CHECK(out["error"]["exit_code"] == exit_code);
  const std::string message = out["error"]["message"].get<std::string>();
  CHECK_MESSAGE(message.find(names) != std::string::npos, "the message should name " << names << ": " << message);
}

bool can_deny_access() {
  if (::geteuid() != 0) return true;
  return run_forked([] { return std::string(); }, 10, true).empty();
}

std::string run_unprivileged(const std::function<std::string()> &body) { return run_forked(body, 60, true); }

std::string run_in_child(const std::function<std::string()> &body, int seconds) {
  return run_forked(body, seconds, false);
}

}  // namespace kiln::test
