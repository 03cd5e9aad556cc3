// kiln robot init: ready recipes (IK, TrajOpt per horizon) for one URDF chain, from the templates
// installed with kiln. kiln-urdf-fk --check refuses what a build's generator step would refuse
// before anything is written; every recipe is parsed as `kiln build` would parse it before any
// file appears; existing files are kept unless --force.
//
// Where kiln's data is (templates/, plugins/{ik,trajopt,common}, kiln-urdf-fk): KILN_DATA_DIR,
// else <dir of the kiln executable>/../share/kiln. An installed tree has the default layout
// (kiln-urdf-fk in <prefix>/bin); a build tree's share/kiln holds kiln-data.json naming the
// source tree's plugins and templates and the build's kiln-urdf-fk (cmake/KilnInstallPlugins.cmake).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>

#include "verbs.hpp"

extern char **environ;

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The shipped solvers' chain limits (plugins/common/kiln_joint_limits.hpp; the robotgen tests check
// that a chain at each limit is written and one joint more refused).
constexpr int kIkMaxJoints = 32;
constexpr int kTrajoptMaxJoints = 16;

struct DataDir {
  fs::path root;       // share/kiln
  fs::path templates;  // *.json.tmpl
  fs::path plugins;    // ik/, trajopt/, common/
  fs::path urdf_fk;    // the kiln-urdf-fk program
};

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
  DataDir data{root, root / "templates", root / "plugins", (root / ".." / ".." / "bin" / "kiln-urdf-fk").lexically_normal()};
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
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

struct ChainFacts {
  std::string robot;
  int joints = 0;
};

// kiln-urdf-fk --check for one plugin's limits: the refusal a build's generator step would give, now.
ChainFacts check_chain(const DataDir &data, const std::string &urdf, const std::string &base, const std::string &tip,
                       int max_joints, bool dynamics, const std::string &plugin) {
  std::vector<std::string> argv = {data.urdf_fk.string(), urdf, "--base", base, "--tip", tip,
                                   "--max-joints", std::to_string(max_joints), "--check"};
  if (dynamics) argv.push_back("--dynamics-check");
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
    throw UsageError("the " + plugin + " plugin cannot take this chain: " + reason +
                     (parser.empty() ? "" : "\nthe URDF parser said: " + parser));
  }
  ChainFacts facts;
  std::istringstream lines(run.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("robot ", 0) == 0) facts.robot = line.substr(6);
    if (line.rfind("joints ", 0) == 0) facts.joints = std::atoi(line.c_str() + 7);
  }
  return facts;
}

// Every string in `value` with each {{key}} replaced.
void substitute(nlohmann::ordered_json &value, const std::vector<std::pair<std::string, std::string>> &fields) {
  if (value.is_string()) {
    std::string text = value.get<std::string>();
    for (const auto &[key, replacement] : fields) {
      const std::string marker = "{{" + key + "}}";
      for (std::size_t at = text.find(marker); at != std::string::npos; at = text.find(marker, at + replacement.size())) {
        text.replace(at, marker.size(), replacement);
      }
    }
    value = text;
  } else if (value.is_array() || value.is_object()) {
    for (auto &item : value) substitute(item, fields);
  }
}

struct Planned {
  std::string plugin;  // "ik", "trajopt"
  fs::path file;
  std::string text;
  Recipe recipe;
};

std::vector<int> parse_horizons(const std::string &list) {
  std::vector<int> horizons;
  std::istringstream items(list);
  for (std::string item; std::getline(items, item, ',');) {
    char *end = nullptr;
    const long n = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || n < 2 || n > 1024) {
      throw UsageError("--trajopt '" + list + "': '" + item +
                       "' is not a horizon; give time steps in 2..1024, comma-separated (e.g. --trajopt 32,64,128)");
    }
    horizons.push_back(static_cast<int>(n));
  }
  if (horizons.empty()) throw UsageError("--trajopt needs at least one horizon (e.g. --trajopt 32)");
  return horizons;
}

struct Options {
  std::string urdf, base, tip, name, trajopt, output = ".";
  bool ik = false, force = false;
};

int run_init(const Flags &flags, const Options &options) {
  const std::vector<int> horizons = options.trajopt.empty() ? std::vector<int>{} : parse_horizons(options.trajopt);
  const bool ik = options.ik || horizons.empty();  // IK when nothing else is asked for
  std::error_code error;
  const fs::path urdf = fs::absolute(options.urdf, error).lexically_normal();
  if (error || !fs::is_regular_file(urdf)) {
    throw NotFoundError("URDF '" + options.urdf + "' is not a readable file");
  }
  const DataDir data = find_data_dir();

  ChainFacts facts;
  if (ik) facts = check_chain(data, urdf.string(), options.base, options.tip, kIkMaxJoints, false, "IK");
  if (!horizons.empty()) {
    facts = check_chain(data, urdf.string(), options.base, options.tip, kTrajoptMaxJoints, true, "TrajOpt");
  }
  const std::string name = options.name.empty() ? facts.robot : options.name;
  const std::string name_source = options.name.empty() ? "the URDF's robot name (pass --name NAME)" : "--name";

  const fs::path out_dir = fs::absolute(options.output).lexically_normal();
  const auto plan = [&](const std::string &plugin, const std::string &template_file, const std::string &file_name,
                        std::vector<std::pair<std::string, std::string>> fields) {
    const fs::path source = data.templates / template_file;
    nlohmann::ordered_json value;  // the template's order, for the reader of the written file
    try {
      value = nlohmann::ordered_json::parse(read_text(source));
    } catch (const json::exception &parse_error) {
      throw IntegrityError("template " + source.string() + " is damaged (" + parse_error.what() +
                           "): reinstall kiln's plugins component");
    }
    fields.insert(fields.end(), {{"plugins", data.plugins.string()}, {"urdf", urdf.string()}, {"base", options.base},
                                 {"tip", options.tip}, {"urdf_fk", data.urdf_fk.string()}});
    substitute(value, fields);
    Planned planned{plugin, out_dir / file_name, value.dump(2) + "\n", Recipe{}};
    try {
      planned.recipe = Recipe::parse(planned.text, out_dir.string(), planned.file.string());
    } catch (const UsageError &refused) {
      throw UsageError("the name from " + name_source + " is refused: " + refused.what());
    }
    return planned;
  };
  std::vector<Planned> recipes;
  if (ik) {
    recipes.push_back(plan("ik", "ik.json.tmpl", "ik-" + name + ".json",
                           {{"name", name}, {"max_joints", std::to_string(kIkMaxJoints)}}));
  }
  for (const int n : horizons) {
    recipes.push_back(plan("trajopt", "trajopt.json.tmpl", "trajopt-" + name + "-N" + std::to_string(n) + ".json",
                           {{"name", name}, {"n", std::to_string(n)}, {"max_joints", std::to_string(kTrajoptMaxJoints)}}));
  }
  if (!options.force) {
    for (const Planned &planned : recipes) {
      if (fs::exists(planned.file)) {
        throw UsageError("" + planned.file.string() +
                         " exists: pass --force to replace it, or -o DIR to write elsewhere");
      }
    }
  }
  fs::create_directories(out_dir, error);
  if (error) throw IoError("cannot create " + out_dir.string() + ": " + error.message());
  // Each file through a temporary and a rename: a reader never sees half a recipe.
  for (const Planned &planned : recipes) {
    const fs::path temporary = planned.file.string() + ".tmp-" + std::to_string(::getpid());
    {
      std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
      out << planned.text;
      out.close();
      if (!out) {
        fs::remove(temporary, error);
        throw IoError("cannot write " + temporary.string());
      }
    }
    fs::rename(temporary, planned.file, error);
    if (error) {
      fs::remove(temporary, error);
      throw IoError("cannot write " + planned.file.string());
    }
  }

  json written = json::array();
  std::string text = "robot " + facts.robot + ": " + options.base + " -> " + options.tip + ", " +
                     std::to_string(facts.joints) + " joints\n";
  for (const Planned &planned : recipes) {
    written.push_back({{"plugin", planned.plugin}, {"file", planned.file.string()},
                       {"consumer", planned.recipe.consumer}, {"name", planned.recipe.name}});
    text += "  wrote " + planned.file.string() + " (" + planned.recipe.consumer + "/" + planned.recipe.name + ")\n";
  }
  text += "next: kiln build --plan FILE, then kiln build FILE (or kiln ensure FILE)\n";
  emit(flags,
       {{"robot", facts.robot}, {"joints", facts.joints}, {"base", options.base}, {"tip", options.tip},
        {"recipes", written}},
       text);
  return 0;
}

}  // namespace

Verb add_robot(CLI::App &app, const Flags &flags) {
  auto options = std::make_shared<Options>();
  CLI::App *command = app.add_subcommand("robot", "recipes for a robot of your own");
  command->require_subcommand(1);
  CLI::App *init = command->add_subcommand(
      "init", "write ready IK and TrajOpt recipes for a URDF chain (checked now, as a build would check it)");
  init->fallthrough();  // --json, -v after "init"
  init->add_option("urdf", options->urdf, "the robot's URDF (expand a .xacro first: xacro FILE.xacro > FILE.urdf)")
      ->required();
  init->add_option("--base", options->base, "the chain's base link")->required();
  init->add_option("--tip", options->tip, "the chain's tip link")->required();
  init->add_option("--name", options->name, "the recipes' name (default: the URDF's robot name)");
  init->add_flag("--ik", options->ik, "an IK recipe (the default when --trajopt is not given)");
  init->add_option("--trajopt", options->trajopt, "TrajOpt recipes for these horizons, e.g. 32,64,128");
  init->add_option("-o,--output", options->output, "the directory to write them to (default: here)");
  init->add_flag("--force", options->force, "replace recipe files that exist");
  return {command, [&flags, options] { return run_init(flags, *options); }};
}

}  // namespace kiln::cli
