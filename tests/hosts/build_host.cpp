// A library host for the orphan tests: builds a recipe through kiln's C++ API on a worker
// thread, as a controller does on miss, until it finishes or is killed.
// Usage: kiln_test_build_host CACHE_DIR RECIPE_FILE
#include <cstdio>
#include <thread>

#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CACHE_DIR RECIPE_FILE\n", argv[0]);
    return 2;
  }
  int status = 0;
  std::thread worker([&] {
    try {
      kiln::RuntimeOptions options;
      options.cache_dir = argv[1];
      options.declared_device = "sm_90";
      kiln::Runtime runtime(options);
      const kiln::BuildResult result = runtime.build(kiln::Recipe::load(argv[2]));
      std::printf("%s\n", result.content_key.c_str());
    } catch (const kiln::Error &error) {
      std::fprintf(stderr, "%s\n", error.what());
      status = error.exit_code();
    }
  });
  worker.join();
  return status;
}
