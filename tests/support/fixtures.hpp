// Test fixtures: temporary stores, environment overrides, running the CLI, forging entries.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::test {

namespace fs = boost::filesystem;

// A fresh directory under $TMPDIR (mode 0755), removed with everything in it at scope exit.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  const fs::path &path() const { return path_; }
  fs::path operator/(const std::string &child) const { return path_ / child; }

 private:
  fs::path path_;
};

// Sets (or with nullopt unsets) an environment variable for the scope.
class ScopedEnv {
 public:
  ScopedEnv(std::string name, const std::optional<std::string> &value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// The shell words that run the kiln CLI built with the tests (through the emulator in a cross
// build), its path quoted.
std::string kiln_cli_command();

// Runs the kiln CLI built with the tests; env entries are added to the child's environment.
CommandResult run_kiln(const std::vector<std::string> &args, const std::map<std::string, std::string> &env = {});
// The environment of a CLI run against one store: `cache` the writable store, no read-only
// layers, a declared sm_90 device (no driver needed).
std::map<std::string, std::string> cli_env(const fs::path &cache);

// text as one POSIX shell word ('...', an embedded ' as '\'').
std::string shell_quote(const std::string &text);

// Runs a shell command line, capturing stdout and stderr.
CommandResult run_shell(const std::string &command);

// A copy of the directory tree `from` (regular files and directories) at `to`.
void copy_tree(const fs::path &from, const fs::path &to);

std::string read_text(const fs::path &file);
void write_text(const fs::path &file, const std::string &text);

// Whether any mapping of this process comes from `file` (is it dlopen'ed right now?).
bool is_mapped(const fs::path &file);

// The name lease_holder_name() gives this process, with the pid of a process that is gone (a
// child of this one, exited and reaped): what a build SIGKILLed while holding a remote build
// lease leaves in the lease.
std::string gone_lease_holder();

// Write a store entry by hand, as a damaged or hostile store would hold it: `file` copied in
// as the artifact with a correct digest, the identity given, and the manifest pointing at it.
void forge_entry(const fs::path &store, const std::string &consumer, const std::string &name,
                 const std::string &content_key, const fs::path &file, const std::string &archs_json = "[]");

}  // namespace kiln::test
