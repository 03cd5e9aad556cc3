// kiln robot init: ready recipes (IK, TrajOpt per horizon) for one URDF chain, from the templates
// installed with kiln. kiln-urdf-fk --check refuses what a build's generator step would refuse
// before anything is written; every recipe is parsed as `kiln build` would parse it before any
// file appears; existing files are kept unless --force.
// Where kiln's data is: robot_tool.hpp.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>

#include "robot_tool.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The shipped solvers' chain limits (plugins/common/kiln_joint_limits.hpp; the robotgen tests check
// that a chain at each limit is written and one joint more refused).
constexpr int kIkMaxJoints = 32;
constexpr int kTrajoptMaxJoints = 16;


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

  // kiln-urdf-fk --check for each plugin's limits: the refusal a build's generator step would give, now.
  ChainCheck facts;
  if (ik) {
    facts = check_chain(data, urdf.string(), options.base, options.tip, {"--max-joints", std::to_string(kIkMaxJoints)},
                        "the IK plugin");
  }
  if (!horizons.empty()) {
    facts = check_chain(data, urdf.string(), options.base, options.tip,
                        {"--max-joints", std::to_string(kTrajoptMaxJoints), "--dynamics-check"}, "the TrajOpt plugin");
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
