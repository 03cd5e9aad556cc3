#include <kiln/recipe.hpp>

#include <algorithm>
#include <cctype>
#include <set>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "builder/backends/cmake_recipe.hpp"
#include "builder/recipe_reader.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

namespace fs = boost::filesystem;
using nlohmann::json;
using builder::RecipeReader;

bool valid_define(const std::string &define) {
  const std::size_t equals = define.find('=');
  const std::string name = define.substr(0, equals);
  if (name.empty() || !(std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_')) return false;
  for (char c : name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

const std::set<std::string> kFields = {"schema", "consumer", "name", "backend", "sources", "headers", "include_dirs",
                                       "defines", "flags", "link_flags", "archs", "artifact", "generators",
                                       "unit_memory_mb", "kernels", "lto", "project", "project_files",
                                       "cmake_options", "target", "output"};
// What only one kind of recipe reads: a field of the other kind is refused, never ignored.
const std::set<std::string> kCompileFields = {"sources", "headers", "include_dirs", "defines", "flags", "link_flags"};
const std::set<std::string> kCmakeFields = {"project", "project_files", "cmake_options", "target", "output"};
constexpr std::uint64_t kMaxUnitMemoryMb = 1ull << 24;  // 16 TiB
const std::set<std::string> kGeneratorFields = {"name", "command", "inputs", "outputs", "tool", "tool_identity", "check"};
// Flags kiln sets itself: a recipe that sets them would break the object/link layout.
const std::set<std::string> kReservedFlags = {"-o", "-c", "--shared", "-shared", "--output-file", "-dc", "-rdc=true",
                                              "--compile", "-lib", "--lib"};

std::string relative_to(const std::string &path, const std::string &base) {
  const fs::path relative = fs::path(path).lexically_relative(base);
  return relative.empty() ? path : relative.string();
}

}  // namespace

Recipe Recipe::load(const std::string &path) try {
  const fs::path file = fs::absolute(path).lexically_normal();
  std::string text;
  try {
    text = files::read_file(file, files::FileOrigin::input, files::kMaxJsonFileBytes);
  } catch (const NotFoundError &) {
    throw NotFoundError("recipe " + file.string() + " does not exist");
  }
  return parse(text, file.parent_path().string(), file.string());
} catch (...) {
  support::rethrow_typed("reading recipe " + path);
}

Recipe Recipe::parse(const std::string &json_text, const std::string &base_dir, const std::string &file_for_errors) try {
  const json root = support::parse_json(json_text, [&](const std::string &why) {
    throw UsageError("recipe " + file_for_errors + ": " + why + "; fix the file (a recipe is one JSON object: docs/recipes.md)");
  });
  if (!root.is_object()) throw UsageError("recipe " + file_for_errors + " must be a JSON object");
  const RecipeReader read(root, file_for_errors, fs::path(base_dir));
  for (const auto &item : root.items()) {
    if (kFields.count(item.key()) == 0) {
      read.fail(item.key(), "is not a recipe field (known: schema, consumer, name, backend, sources, headers, "
                            "include_dirs, defines, flags, link_flags, archs, artifact, generators, unit_memory_mb, "
                            "kernels, lto, project, project_files, cmake_options, target, output)");
    }
  }
  Recipe recipe;
  recipe.file = file_for_errors;
  recipe.base_dir = base_dir;
  const json *schema = read.find(root, "schema");
  if (schema == nullptr || !schema->is_number_integer()) read.fail("schema", "must be the integer 1");
  if (support::checked_integer<int>(*schema) != kRecipeSchema) {
    read.fail("schema", "is " + support::describe_json(*schema) + "; this kiln reads recipe schema " + std::to_string(kRecipeSchema));
  }
  recipe.consumer = read.string(root, "consumer", "", true);
  recipe.name = read.string(root, "name", "", true);
  store::validate_name("recipe " + file_for_errors + ": consumer", recipe.consumer);
  store::validate_name("recipe " + file_for_errors + ": name", recipe.name);
  recipe.backend = read.string(root, "backend", "", false, "nvcc");
  if (recipe.backend != "nvcc" && recipe.backend != "nvrtc" && recipe.backend != "cmake") {
    read.fail("backend", "is \"" + recipe.backend + "\"; use \"nvcc\" (shared-object plugin), \"nvrtc\" (device "
                         "images) or \"cmake\" (a plugin built by a CMake project)");
  }
  const bool cmake = recipe.backend == "cmake";
  for (const auto &item : root.items()) {
    if (cmake && kCompileFields.count(item.key()) != 0) {
      read.fail(item.key(), "is for nvcc and nvrtc recipes; a \"backend\": \"cmake\" recipe compiles what its "
                            "CMakeLists.txt says: set it there, or pass it through \"cmake_options\"");
    }
    if (!cmake && kCmakeFields.count(item.key()) != 0) {
      read.fail(item.key(), "is for \"backend\": \"cmake\" recipes; this recipe's backend is " + recipe.backend);
    }
  }
  if (cmake) builder::read_cmake_fields(read, recipe);

  std::set<std::string> stems;
  for (const auto &source : read.strings(root, "sources", "")) {
    const std::string resolved = read.path("sources", source, false, false);
    const fs::path p(resolved);
    const std::string ext = p.extension().string();
    if (ext != ".cu" && ext != ".cpp" && ext != ".cc" && ext != ".cxx") {
      read.fail("sources", "holds " + source + "; sources end in .cu, .cpp, .cc or .cxx (headers go in \"headers\")");
    }
    if (!stems.insert(p.stem().string()).second) {
      read.fail("sources", "holds two sources named " + p.stem().string() +
                               ".*; each source becomes one object file, so rename one of them");
    }
    recipe.sources.push_back(resolved);
  }
  if (recipe.sources.empty() && !cmake) read.fail("sources", "is empty or missing; list the .cu/.cpp files to compile");
  for (const auto &header : read.strings(root, "headers", "")) recipe.headers.push_back(read.path("headers", header, false, true));
  for (const auto &dir : read.strings(root, "include_dirs", "")) recipe.include_dirs.push_back(read.path("include_dirs", dir, true, true));
  recipe.defines = read.strings(root, "defines", "");
  for (const auto &define : recipe.defines) {
    if (!valid_define(define)) read.fail("defines", "holds \"" + define + "\"; write NAME or NAME=VALUE (NAME a C identifier)");
  }
  recipe.flags = read.strings(root, "flags", "");
  recipe.link_flags = read.strings(root, "link_flags", "");
  for (const auto &flag : recipe.flags) {
    if (kReservedFlags.count(flag) != 0) read.fail("flags", "holds " + flag + ", which kiln sets itself; remove it");
  }
  for (const auto &flag : recipe.link_flags) {
    if (kReservedFlags.count(flag) != 0) read.fail("link_flags", "holds " + flag + ", which kiln sets itself; remove it");
    if (flag.find("nodelete") != std::string::npos) {
      read.fail("link_flags", "holds " + flag + ", which marks the plugin NODELETE so that it could never be unloaded "
                              "(abi/README.md \"Build rules\"); remove it");
    }
  }
  recipe.archs = read.strings(root, "archs", "");
  if (recipe.archs.empty()) read.fail("archs", "is empty or missing; list targets such as [\"sm_90\", \"sm_87\"] or [\"native\"]");
  for (const auto &arch : recipe.archs) {
    if (arch == "native") continue;
    try {
      Arch::parse(arch);
    } catch (const UsageError &error) {
      read.fail("archs", std::string("holds an unknown arch: ") + error.what());
    }
  }
  recipe.artifact = read.string(root, "artifact", "", recipe.builds_plugin(), "");
  if (recipe.builds_plugin()) {
    if (!store::is_valid_name(recipe.artifact) || fs::path(recipe.artifact).extension() != ".so") {
      read.fail("artifact", "is \"" + recipe.artifact + "\"; name the shared object, e.g. \"libsolver.so\"");
    }
  } else {
    if (recipe.artifact.empty()) recipe.artifact = recipe.name + ".images";
    const std::string ext = fs::path(recipe.artifact).extension().string();
    if (!store::is_valid_name(recipe.artifact) || ext == ".cubin" || ext == ".ptx" || ext == ".fatbin" ||
        ext == ".json" || ext == ".log") {
      read.fail("artifact", "is \"" + recipe.artifact + "\"; an nvrtc recipe's artifact is the entry's image index, "
                            "a plain file name such as \"" + recipe.name + ".images\" (image files are named "
                            "<arch>.cubin, <arch>.ptx and images.fatbin)");
    }
  }

  // Device-image recipes: the kernels to record (and resolve at every load), and LTO.
  const json *kernels = read.find(root, "kernels");
  if (recipe.builds_plugin()) {
    if (kernels != nullptr) {
      read.fail("kernels", "is for \"backend\": \"nvrtc\" recipes; a plugin reaches its kernels itself");
    }
  } else {
    if (kernels == nullptr || !kernels->is_array() || kernels->empty()) {
      read.fail("kernels", "is empty or missing; an nvrtc recipe lists the kernels it provides as name "
                           "expressions, e.g. [\"saxpy\", \"scale<float>\"] (with several sources: "
                           "[{\"name\": \"saxpy\", \"source\": \"saxpy.cu\"}])");
    }
    std::set<std::string> names;
    for (std::size_t i = 0; i < kernels->size(); ++i) {
      const json &item = (*kernels)[i];
      const std::string where = "kernels[" + std::to_string(i) + "]";
      RecipeKernel kernel;
      if (item.is_string()) {
        kernel.name = item.get<std::string>();
      } else if (item.is_object()) {
        for (const auto &field : item.items()) {
          if (field.key() != "name" && field.key() != "source") {
            read.fail(where + "." + field.key(), "is not a kernel field (known: name, source)");
          }
        }
        kernel.name = read.string(item, "name", where + ".", true);
        const std::string source = read.string(item, "source", where + ".", false);
        if (!source.empty()) {
          kernel.source = read.path(where + ".source", source, false, false);
          if (std::find(recipe.sources.begin(), recipe.sources.end(), kernel.source) == recipe.sources.end()) {
            read.fail(where + ".source", "names " + source + ", which is not one of the recipe's \"sources\"");
          }
        }
      } else {
        read.fail(where, "must be a name expression (string) or {\"name\": ..., \"source\": ...}");
      }
      if (kernel.name.empty() || kernel.name.find_first_of("\n\r") != std::string::npos ||
          kernel.name.find('\0') != std::string::npos) {
        read.fail(where, "holds an empty or multi-line kernel name");
      }
      if (kernel.source.empty() && recipe.sources.size() > 1) {
        read.fail(where, "is \"" + kernel.name + "\" but the recipe has several sources: write {\"name\": \"" +
                             kernel.name + "\", \"source\": \"<the .cu defining it>\"}");
      }
      if (!names.insert(kernel.name).second) read.fail(where, "lists kernel \"" + kernel.name + "\" twice");
      recipe.kernels.push_back(std::move(kernel));
    }
  }
  if (const json *lto = read.find(root, "lto")) {
    if (!lto->is_boolean()) read.fail("lto", "must be true or false");
    recipe.lto = lto->get<bool>();
    if (recipe.lto && recipe.builds_plugin()) {
      read.fail("lto", "is for \"backend\": \"nvrtc\" recipes; for nvcc put -dlto in \"flags\" and \"link_flags\"");
    }
  }
  if (const json *memory = read.find(root, "unit_memory_mb")) {
    // Bounded so that the byte count (MiB * 2^20) cannot overflow.
    const auto mib = support::checked_integer<std::uint64_t>(*memory, 1, kMaxUnitMemoryMb);
    if (!mib) {
      read.fail("unit_memory_mb", "is " + support::describe_json(*memory) + "; it must be an integer from 1 to " +
                                      std::to_string(kMaxUnitMemoryMb) + " (MiB one compile may use)");
    }
    recipe.unit_memory_mb = *mib;
  }

  if (const json *generators = read.find(root, "generators")) {
    if (!generators->is_array()) read.fail("generators", "must be a list of generator steps");
    std::set<std::string> outputs;
    for (std::size_t i = 0; i < generators->size(); ++i) {
      const json &step = (*generators)[i];
      const std::string where = "generators[" + std::to_string(i) + "].";
      if (!step.is_object()) read.fail(where, "must be an object");
      for (const auto &item : step.items()) {
        if (kGeneratorFields.count(item.key()) == 0) {
          read.fail(where + item.key(), "is not a generator field (known: name, command, inputs, outputs, tool, tool_identity, check)");
        }
      }
      GeneratorStep generator;
      generator.name = read.string(step, "name", where, true);
      store::validate_name("recipe " + file_for_errors + ": " + where + "name", generator.name);
      generator.command = read.strings(step, "command", where);
      if (generator.command.empty()) read.fail(where + "command", "is empty; give the program and its arguments as a list");
      for (const auto &input : read.strings(step, "inputs", where)) {
        generator.inputs.push_back(read.path(where + "inputs", input, false, false));
      }
      generator.outputs = read.strings(step, "outputs", where);
      if (generator.outputs.empty()) read.fail(where + "outputs", "is empty; declare the files the step writes into {gen}");
      for (const auto &output : generator.outputs) {
        if (!store::is_valid_name(output)) read.fail(where + "outputs", "holds \"" + output + "\"; outputs are plain file names inside {gen}");
        if (!outputs.insert(output).second) read.fail(where + "outputs", "holds \"" + output + "\", which another step also writes");
      }
      const std::string tool = read.string(step, "tool", where, false);
      if (!tool.empty()) generator.tool = read.path(where + "tool", tool, false, false);
      generator.tool_identity = read.string(step, "tool_identity", where, false);
      if (generator.tool.empty() && generator.tool_identity.empty()) {
        read.fail(where + "tool", "is missing: give the tool's path (hashed by content) or a tool_identity string, so "
                                  "that a changed generator rebuilds the artifact");
      }
      if (read.find(step, "check") != nullptr) {
        generator.check = read.strings(step, "check", where);
        if (generator.check.empty()) read.fail(where + "check", "is empty; give the check's program and arguments as a list, or leave it out");
        for (const auto &word : generator.check) {
          if (word.find("{gen}") != std::string::npos) {
            read.fail(where + "check", "uses {gen}: a check writes nothing and runs before {gen} exists; check the inputs only");
          }
          if (word.find("{tool}") != std::string::npos && generator.tool.empty()) {
            read.fail(where + "check", "uses {tool}, but the step has no \"tool\" (only a tool_identity); name the program");
          }
        }
      }
      recipe.generators.push_back(std::move(generator));
    }
  }
  return recipe;
} catch (...) {
  support::rethrow_typed("reading recipe " + file_for_errors);
}

std::string Recipe::canonical_json() const {
  const auto relative = [this](const std::vector<std::string> &paths) {
    std::vector<std::string> out;
    for (const auto &p : paths) out.push_back(relative_to(p, base_dir));
    return out;
  };
  json generators_json = json::array();
  for (const auto &g : generators) {
    generators_json.push_back({{"name", g.name},
                               {"command", g.command},
                               {"inputs", relative(g.inputs)},
                               {"outputs", g.outputs},
                               {"tool", g.tool.empty() ? "" : relative_to(g.tool, base_dir)},
                               {"tool_identity", g.tool_identity}});
    // Only a step with a check carries it: the input keys of recipes without one stay put.
    if (!g.check.empty()) generators_json.back()["check"] = g.check;
  }
  json root = {{"schema", schema},         {"consumer", consumer},         {"name", name},
               {"backend", backend},       {"sources", relative(sources)}, {"headers", relative(headers)},
               {"include_dirs", relative(include_dirs)}, {"defines", defines},
               {"flags", flags},           {"link_flags", link_flags},     {"archs", archs},
               {"artifact", artifact},     {"generators", generators_json}};  // unit_memory_mb only schedules: it does not key
  // Only device-image recipes carry these, so an nvcc recipe's canonical form (and input key)
  // is what it was before they existed.
  if (backend == "cmake") {  // only cmake recipes carry these: other recipes' input keys stay put
    root["project"] = relative_to(project, base_dir);
    root["project_files"] = project_files;
    root["cmake_options"] = cmake_options;
    root["target"] = target;
    root["output"] = output;
  }
  if (!builds_plugin()) {
    json kernels_json = json::array();
    for (const auto &kernel : kernels) {
      if (kernel.source.empty()) {
        kernels_json.push_back(kernel.name);
      } else {
        kernels_json.push_back({{"name", kernel.name}, {"source", relative_to(kernel.source, base_dir)}});
      }
    }
    root["kernels"] = kernels_json;
    root["lto"] = lto;
  }
  return support::dump_json(root);
}

const char *to_string(BuildResult::Outcome outcome) {
  switch (outcome) {
    case BuildResult::Outcome::hit: return "hit";
    case BuildResult::Outcome::reused: return "reused";
    case BuildResult::Outcome::built: return "built";
    case BuildResult::Outcome::fetched: return "fetched";
  }
  return "?";
}

}  // namespace kiln
