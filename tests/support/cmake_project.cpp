#include "support/cmake_project.hpp"

#include <sstream>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>

#include <kiln/ext/example.h>
#include <kiln/recipe.hpp>

#include "builder/toolchain.hpp"

namespace kiln::test {

CmakeProjectDir::CmakeProjectDir()
    : cmake_(std::string("KILN_CMAKE"), (dir_ / "src" / "recipes" / "cmake-wrapper.sh").string()),
      cmake_log_(std::string("KILN_TEST_CMAKE_LOG"), (dir_ / "cmake.log").string()),
      gen_log_(std::string("KILN_TEST_GEN_LOG"), (dir_ / "generator.log").string()),
      pid_dir_(std::string("KILN_TEST_PID_DIR"), (dir_ / "pids").string()) {
  copy_tree(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "cmake", dir_ / "src");
  fs::create_directories(pids());
  builder::reset_toolchain_memo_for_tests();
}

Recipe CmakeProjectDir::variant(const std::string &file, const std::function<void(nlohmann::json &)> &edit) const {
  nlohmann::json recipe = nlohmann::json::parse(read_text(recipe_file()));
  edit(recipe);
  write_text(recipe_file(file), recipe.dump(2));
  return Recipe::load(recipe_file(file).string());
}

RuntimeOptions CmakeProjectDir::options(LogCallback log) const {
  RuntimeOptions options;
  options.cache_dir = cache().string();
  options.declared_device = "sm_90";
  options.log = std::move(log);
  return options;
}

CmakeProjectDir::Runs CmakeProjectDir::take_cmake_runs() const {
  Runs runs;
  const fs::path log = dir_ / "cmake.log";
  if (!fs::exists(log)) return runs;
  std::istringstream lines(read_text(log));
  for (std::string line; std::getline(lines, line);) {
    ++runs.all;
    if (line.rfind("-S ", 0) == 0) ++runs.configures;
    if (line.rfind("--build ", 0) == 0) ++runs.builds;
  }
  write_text(log, "");
  return runs;
}

int CmakeProjectDir::generator_runs() const {
  const fs::path log = dir_ / "generator.log";
  if (!fs::exists(log)) return 0;
  std::istringstream lines(read_text(log));
  int runs = 0;
  for (std::string line; std::getline(lines, line);) ++runs;
  return runs;
}

double CmakeProjectDir::answer(Runtime &runtime, const std::string &name) const {
  Module module = runtime.load("cmake-tests", name);
  Instance instance = module.create_instance();
  const auto *table = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(table != nullptr);
  return table->host_fma(instance.handle(), 2.0, 3.0, 1.0);
}

int store_dirs(const fs::path &cache) {
  int count = 0;
  boost::system::error_code error;
  for (fs::directory_iterator it(cache / "consumers" / "cmake-tests" / "store", error), end; !error && it != end;
       it.increment(error)) {
    ++count;
  }
  return count;
}

}  // namespace kiln::test
