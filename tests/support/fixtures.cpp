#include "support/fixtures.hpp"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <boost/filesystem/operations.hpp>

#include <kiln/version.hpp>

#include "files/digest.hpp"
#include "remote/lease_holder.hpp"

namespace kiln::test {

TempDir::TempDir() {
  const char *base = std::getenv("TMPDIR");
  std::string pattern = std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/kiln-test-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  ::chmod(pattern.c_str(), 0755);
  path_ = pattern;
}

TempDir::~TempDir() {
  // Tests chmod things; make everything removable again first.
  boost::system::error_code ignored;
  for (fs::recursive_directory_iterator it(path_, ignored), end; !ignored && it != end; it.increment(ignored)) {
    if (!fs::is_symlink(it->path())) ::chmod(it->path().c_str(), 0755);
  }
  fs::remove_all(path_, ignored);
}

ScopedEnv::ScopedEnv(std::string name, const std::optional<std::string> &value) : name_(std::move(name)) {
  if (const char *old = std::getenv(name_.c_str())) old_ = old;
  if (value) {
    ::setenv(name_.c_str(), value->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

ScopedEnv::~ScopedEnv() {
  if (old_) {
    ::setenv(name_.c_str(), old_->c_str(), 1);
  } else {
    ::unsetenv(name_.c_str());
  }
}

void copy_tree(const fs::path &from, const fs::path &to) {
  fs::create_directories(to);
  for (fs::directory_iterator it(from), end; it != end; ++it) {
    if (fs::is_directory(it->status())) {
      copy_tree(it->path(), to / it->path().filename());
    } else {
      fs::copy_file(it->path(), to / it->path().filename());
    }
  }
}

std::string read_text(const fs::path &file) {
  std::ifstream in(file.string(), std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

void write_text(const fs::path &file, const std::string &text) {
  std::ofstream out(file.string(), std::ios::binary | std::ios::trunc);
  out << text;
}

std::string shell_quote(const std::string &text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

CommandResult run_shell(const std::string &command) {
  TempDir scratch;
  const fs::path out = scratch / "out", err = scratch / "err";
  const int status = std::system((command + " >" + shell_quote(out.string()) + " 2>" + shell_quote(err.string())).c_str());
  CommandResult result;
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  result.out = read_text(out);
  result.err = read_text(err);
  return result;
}

std::string kiln_cli_command() {
#ifdef KILN_TEST_EMULATOR
  return KILN_TEST_EMULATOR " " + shell_quote(KILN_CLI_PATH);  // a cross build: the CLI is an aarch64 binary
#else
  return shell_quote(KILN_CLI_PATH);
#endif
}

CommandResult run_kiln(const std::vector<std::string> &args, const std::map<std::string, std::string> &env) {
  std::string command = "env";
  for (const auto &[name, value] : env) command += " " + shell_quote(name + "=" + value);
  command += " " + kiln_cli_command();
  for (const auto &arg : args) command += " " + shell_quote(arg);
  return run_shell(command);
}

bool is_mapped(const fs::path &file) {
  const std::string maps = read_text("/proc/self/maps");
  return maps.find(fs::canonical(file).string()) != std::string::npos;
}

std::string gone_lease_holder() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  if (child < 0 || ::waitpid(child, &status, 0) != child) throw std::runtime_error("gone_lease_holder: fork or waitpid failed");
  std::string name = remote::lease_holder_name();
  const std::string mine = ":" + std::to_string(::getpid()) + ":";
  name.replace(name.find(mine), mine.size(), ":" + std::to_string(child) + ":");
  return name;
}

void forge_entry(const fs::path &store, const std::string &consumer, const std::string &name,
                 const std::string &content_key, const fs::path &file, const std::string &archs_json) {
  const fs::path consumer_dir = store / "consumers" / consumer;
  const fs::path entry = consumer_dir / "store" / content_key;
  fs::create_directories(entry);
  const fs::path target = entry / file.filename();
  fs::copy_file(file, target, fs::copy_options::overwrite_existing);
  const std::string bytes = read_text(target);
  write_text(entry / "meta.json", "{\"schema\":" + std::to_string(kArtifactSchema) + ",\"content_key\":\"" +
                                      content_key + "\",\"kind\":\"plugin\",\"file\":\"" +
                                      file.filename().string() + "\",\"digest\":\"" + files::digest_hex(bytes) +
                                      "\",\"size\":" + std::to_string(bytes.size()) + "}");
  write_text(entry / "identity.json", "{\"key_schema\":" + std::to_string(kKeySchema) +
                                          ",\"artifact_schema\":" + std::to_string(kArtifactSchema) +
                                          ",\"abi_version\":" + std::to_string(kAbiVersion) +
                                          ",\"archs\":" + archs_json + ",\"cuda_toolkit_version\":13000}");
  write_text(consumer_dir / "manifest.json", "{\"schema\":" + std::to_string(kManifestSchema) + ",\"consumer\":\"" +
                                                 consumer + "\",\"artifacts\":{\"" + name +
                                                 "\":{\"content_key\":\"" + content_key + "\",\"kind\":\"plugin\"}}}");
  for (fs::recursive_directory_iterator it(store), end; it != end; ++it) ::chmod(it->path().c_str(), 0755);
}

std::map<std::string, std::string> cli_env(const fs::path &cache) {
  return {{"KILN_CACHE_DIR", cache.string()}, {"KILN_DEVICE", "sm_90"}, {"KILN_STORE_PATH", ""}};
}

}  // namespace kiln::test
