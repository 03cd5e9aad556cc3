#include "support/build_recipe.hpp"

#include <sys/stat.h>

#include <stdexcept>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/example.h>

#include "builder/toolchain.hpp"

namespace kiln::test {

BuildRecipeDir::BuildRecipeDir()
    : nvcc_("KILN_NVCC", (dir_ / "src" / "nvcc-wrapper.sh").string()),
      log_("KILN_TEST_NVCC_LOG", (dir_ / "nvcc.log").string()) {
  fs::create_directories(src());
  for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "build"), end; it != end; ++it) {
    fs::copy_file(it->path(), src() / it->path().filename());
  }
  builder::reset_toolchain_memo_for_tests();
}

RuntimeOptions BuildRecipeDir::options(LogCallback log) const {
  RuntimeOptions options;
  options.cache_dir = cache().string();
  options.declared_device = "sm_90";
  options.log = std::move(log);
  return options;
}

std::map<std::string, std::string> BuildRecipeDir::cli_env() const {
  return {{"KILN_CACHE_DIR", cache().string()},
          {"KILN_DEVICE", "sm_90"},
          {"KILN_STORE_PATH", ""},
          {"KILN_NVCC", (src() / "nvcc-wrapper.sh").string()},
          {"KILN_TEST_NVCC_LOG", (dir_ / "nvcc.log").string()}};
}

fs::path BuildRecipeDir::script(const std::string &name, const std::string &body) const {
  const fs::path file = dir_ / name;
  write_text(file, "#!/bin/sh\n" + body);
  ::chmod(file.c_str(), 0755);
  return file;
}

void BuildRecipeDir::edit(const std::string &file, const std::string &from, const std::string &to) const {
  std::string text = read_text(src() / file);
  const auto at = text.find(from);
  if (at == std::string::npos) throw std::logic_error(file + " has no \"" + from + "\" to edit");
  text.replace(at, from.size(), to);
  write_text(src() / file, text);
}

double two_units_answer(Runtime &runtime) {
  Module module = runtime.load("build-tests", "two-units");
  Instance instance = module.create_instance();
  const auto *table = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  if (table == nullptr) throw std::logic_error("build-tests/two-units offers no kiln_example_v1");
  return table->host_fma(instance.handle(), 2.0, 3.0, 1.0);
}

}  // namespace kiln::test
