// Fuzz target: a recipe's text (Recipe::parse, what Recipe::load does after reading the file).
// Paths in a recipe are relative to its directory and must exist, so the recipes run against a
// fixed directory holding the files the seed corpus names (made once, shared by every process
// of a run: its content never changes). What parses must also give its canonical form.
#include "fuzz_common.hpp"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include <boost/filesystem/operations.hpp>

#include <kiln/recipe.hpp>

namespace {

namespace fs = boost::filesystem;

std::string base_dir;

void write_if_missing(const fs::path &file, const std::string &text) {
  if (fs::exists(file)) return;
  std::ofstream(file.string()) << text;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  const char *tmp = std::getenv("TMPDIR");
  const fs::path dir = fs::path(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") /
                       ("kiln-fuzz-recipe-" + std::to_string(::getuid()));
  fs::create_directories(dir / "include" / "sub");
  write_if_missing(dir / "plugin.cu", "__global__ void k() {}\n");
  write_if_missing(dir / "helper.cpp", "int helper() { return 1; }\n");
  write_if_missing(dir / "saxpy.cu", "extern \"C\" __global__ void saxpy() {}\n");
  write_if_missing(dir / "common.h", "#pragma once\n");
  write_if_missing(dir / "include" / "sub" / "deep.h", "#pragma once\n");
  write_if_missing(dir / "values.txt", "1 2 3\n");
  write_if_missing(dir / "gen.sh", "#!/bin/sh\n");
  write_if_missing(dir / "robot.urdf", "<robot name=\"r\"/>\n");
  base_dir = dir.string();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  return kiln::fuzz::run([&] {
    const auto recipe = kiln::Recipe::parse(kiln::fuzz::text_of(data, size), base_dir, base_dir + "/recipe.json");
    (void)recipe.canonical_json();
  });
}
