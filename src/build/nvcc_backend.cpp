#include "build/nvcc_backend.hpp"

namespace kiln::build {
namespace {

std::string arch_digits(const Arch &arch) {
  return std::to_string(arch.cc()) + (arch.suffix != '\0' ? std::string(1, arch.suffix) : std::string());
}

}  // namespace

std::string abstract_path(const std::string &path, const std::string &recipe_dir) {
  if (path == recipe_dir) return "$RECIPE";
  if (path.compare(0, recipe_dir.size() + 1, recipe_dir + "/") == 0) return "$RECIPE/" + path.substr(recipe_dir.size() + 1);
  return path;
}

std::vector<std::string> gencode_flags(const std::vector<Arch> &archs) {
  std::vector<std::string> flags;
  for (const auto &arch : archs) {
    const std::string digits = arch_digits(arch);
    const std::string code = arch.kind == Arch::Kind::ptx ? "compute_" + digits : "sm_" + digits;
    flags.push_back("-gencode=arch=compute_" + digits + ",code=" + code);
  }
  return flags;
}

std::vector<std::string> compile_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                         const std::string &unit) {
  std::vector<std::string> command = {
      "-c", abstract_path(unit, recipe.base_dir), "-o", "$OUT", "-std=c++17",
      // Plugins export only kiln_plugin_negotiate and must unload cleanly (abi/README.md).
      "-Xcompiler=-fPIC,-fvisibility=hidden,-fvisibility-inlines-hidden,-fno-gnu-unique", "-I$ABI", "-I$GEN"};
  for (const auto &dir : recipe.include_dirs) command.push_back("-I" + abstract_path(dir, recipe.base_dir));
  for (const auto &define : recipe.defines) command.push_back("-D" + define);
  for (const auto &flag : gencode_flags(archs)) command.push_back(flag);
  for (const auto &flag : recipe.flags) command.push_back(flag);
  return command;
}

std::vector<std::string> link_command(const Recipe &recipe, const std::vector<Arch> &archs,
                                      const std::vector<std::string> &objects) {
  std::vector<std::string> command = {"--shared", "-o", "$OUT"};
  for (const auto &object : objects) command.push_back(object);
  for (const auto &flag : gencode_flags(archs)) command.push_back(flag);
  command.push_back("-cudart=static");
  command.push_back("-Xlinker=--no-undefined,--exclude-libs,ALL");
  for (const auto &flag : recipe.link_flags) command.push_back(flag);
  return command;
}

std::vector<std::string> substitute(std::vector<std::string> command, const Placeholders &values) {
  for (auto &arg : command) {
    for (const auto &[name, value] : values) {
      for (std::size_t at = arg.find(name); at != std::string::npos; at = arg.find(name, at + value.size())) {
        arg.replace(at, name.size(), value);
      }
    }
  }
  return command;
}

}  // namespace kiln::build
