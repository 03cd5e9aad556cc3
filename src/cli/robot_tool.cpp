#include "robot_tool.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

extern char **environ;

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct ProgramResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

// Runs `argv` (no shell: paths are passed as they are) and collects what it prints.
ProgramResult run_program(const std::vector<std::string> &argv) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) throw IoError(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 2);
  std::vector<char *> args;
  for (const std::string &arg : argv) args.push_back(const_cast<char *>(arg.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = ::posix_spawn(&pid, argv.front().c_str(), &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  ProgramResult result;
  if (spawned != 0) {
    ::close(pipe_fds[0]);
    throw IoError("cannot run '" + argv.front() + "': " + std::strerror(spawned));
  }
  char buffer[4096];
  for (;;) {
    const ssize_t got = ::read(pipe_fds[0], buffer, sizeof buffer);
    if (got > 0) {
      result.output.append(buffer, static_cast<std::size_t>(got));
    } else if (got == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(pipe_fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace

std::string read_text(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw NotFoundError("cannot read '" + path.string() + "'");
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

DataDir find_data_dir() {
  fs::path root;
  std::string why;
  if (const char *env = ::secure_getenv("KILN_DATA_DIR"); env != nullptr && *env != '\0') {
    root = env;
    why = "KILN_DATA_DIR";
  } else {
    std::error_code error;
    const fs::path exe = fs::read_symlink("/proc/self/exe", error);
    if (error) throw IoError("cannot tell where the kiln executable is (/proc/self/exe): " + error.message());
    root = (exe.parent_path() / ".." / "share" / "kiln").lexically_normal();
    why = "the kiln executable's ../share/kiln";
  }
  DataDir data{root, root / "templates", root / "plugins",
               (root / ".." / ".." / "bin" / "kiln-urdf-fk").lexically_normal()};
  if (fs::exists(root / "kiln-data.json")) {  // a build tree: the data stays where the sources and the build are
    json layout;
    try {
      layout = json::parse(read_text(root / "kiln-data.json"));
      data.templates = layout.at("templates").get<std::string>();
      data.plugins = layout.at("plugins").get<std::string>();
      data.urdf_fk = layout.value("urdf_fk", std::string());
    } catch (const json::exception &error) {
      throw IntegrityError("" + (root / "kiln-data.json").string() + " is damaged (" + error.what() +
                           "): re-run cmake in the build tree");
    }
  }
  if (!fs::is_directory(data.templates) || !fs::is_directory(data.plugins)) {
    throw NotFoundError("no robot templates at " + root.string() + " (" + why +
                        "): install kiln with its plugins component, or set KILN_DATA_DIR to a share/kiln directory");
  }
  if (data.urdf_fk.empty() || !fs::exists(data.urdf_fk)) {
    throw NotFoundError("kiln-urdf-fk is not at '" + data.urdf_fk.string() +
                        "': this kiln was built or installed without its plugins (KILN_BUILD_PLUGINS=ON and the "
                        "plugins component install it)");
  }
  return data;
}

ChainCheck check_chain(const DataDir &data, const std::string &urdf, const std::string &base, const std::string &tip,
                       const std::vector<std::string> &options, const std::string &what) {
  std::vector<std::string> argv = {data.urdf_fk.string(), urdf, "--base", base, "--tip", tip, "--check"};
  argv.insert(argv.end(), options.begin(), options.end());
  const ProgramResult run = run_program(argv);
  if (run.exit_code != 0) {
    const auto trimmed = [](std::string text) {
      while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
      return text;
    };
    // The generator's refusal, and what the URDF parser printed before it (a malformed file's reason).
    std::string reason = trimmed(run.output), parser;
    const std::string prefix = "kiln-urdf-fk: error: ";
    if (const std::size_t at = reason.find(prefix); at != std::string::npos) {
      parser = trimmed(reason.substr(0, at));
      reason = reason.substr(at + prefix.size());
    }
    throw UsageError(what + " cannot take this chain: " + reason +
                     (parser.empty() ? "" : "\nthe URDF parser said: " + parser));
  }
  ChainCheck facts;
  // The canonical text comes last (after the parser's warnings, if any, and the facts).
  const std::size_t text_at = run.output.find("\nkiln-model ");
  if (text_at != std::string::npos) facts.model_text = run.output.substr(text_at + 1);
  std::istringstream lines(run.output.substr(0, text_at));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("robot ", 0) == 0) facts.robot = line.substr(6);
    if (line.rfind("joints ", 0) == 0) facts.joints = std::atoi(line.c_str() + 7);
    if (line.rfind("fingerprint ", 0) == 0) facts.fingerprint = line.substr(12);
  }
  return facts;
}

}  // namespace kiln::cli
