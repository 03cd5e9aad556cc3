// kiln IK tests: the split form without a GPU (plugins/ik/README.md, "Split form"). Both recipes
// are built by kiln for a declared Orin (sm_87, integrated): the device images by NVRTC in
// process, the host part by the nvcc backend with -cudart=none; the host part is then loaded,
// activated host only and compared with the nvcc form on the same targets. The gpu suite
// (test_ik_split_gpu.cpp) solves on a device with both forms.
// The same answers bit for bit on the host path: one source (ik_batch_host.hpp), IEEE float
// without contraction (-std=c++17, x86-64 without FMA).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/ik.h>
#include <kiln/ext/robotmodel.h>
#include <kiln/ext/selftest.h>
#include <kiln/recipe.hpp>

#include "ik_split_support.hpp"
#include "ik_test_support.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"

namespace {

namespace fs = boost::filesystem;
using namespace kiln::test::ik_split;
using kiln::test::read_text;

constexpr const char *kOrin = "sm_87,integrated=1";

// Both recipes built once per process for the declared Orin.
SplitStore &orin_store() {
  static SplitStore store(std::string(kOrin), /*host_part=*/true);
  return store;
}

using kiln::test::contains;

// Whether a file's bytes hold `needle` (a library name in .dynstr, a symbol name).
bool file_holds(const fs::path &file, const std::string &needle) { return contains(read_text(file), needle); }

std::optional<std::string> no_split_toolchain() {
  if (auto why = kiln::test::no_nvrtc()) return why;
  return kiln::test::no_toolchain();
}

}  // namespace

TEST_CASE("ik split: the recipes: kernels by NVRTC for sm_87, sm_110, sm_90 and PTX; the host part plain C++ naming them") {
  const kiln::Recipe kernels = kiln::Recipe::load(recipe_file(kKernels));
  CHECK(kernels.backend == "nvrtc");
  CHECK(kernels.consumer == "kiln-ik");
  CHECK(kernels.archs == std::vector<std::string>{"sm_87", "sm_110", "sm_90", "compute_87"});
  REQUIRE(kernels.sources.size() == 1);
  CHECK(fs::path(kernels.sources[0]).filename() == "ik_kernels.cu");
  REQUIRE(kernels.kernels.size() == 1);
  CHECK(kernels.kernels[0].name == "kiln_ik_solve_kernel");
  const kiln::Recipe host = kiln::Recipe::load(recipe_file(kHostPart));
  CHECK(host.backend == "nvcc");
  CHECK(host.consumer == kernels.consumer);
  CHECK(host.archs == kernels.archs);  // it runs where its kernels run
  REQUIRE(host.sources.size() == 1);
  CHECK(fs::path(host.sources[0]).extension() == ".cpp");
  CHECK(host.link_flags == std::vector<std::string>{"-cudart=none"});
  CHECK(std::find(host.defines.begin(), host.defines.end(), "KILN_IK_KERNELS_NAME=\"" + std::string(kKernels) + "\"") !=
        host.defines.end());
  // One generated chain feeds both, from the same tool and URDF as the nvcc form's recipe.
  const kiln::Recipe nvcc_form = kiln::Recipe::load(recipe_file("iiwa14"));
  REQUIRE(kernels.generators.size() == 1);
  REQUIRE(host.generators.size() == 1);
  CHECK(kernels.generators[0].command == nvcc_form.generators[0].command);
  CHECK(host.generators[0].command == nvcc_form.generators[0].command);
  CHECK(kernels.generators[0].tool == nvcc_form.generators[0].tool);
}

TEST_CASE("ik split: the kernels artifact holds sm_87, sm_110 and sm_90 cubins and compute_87 PTX" *
          kiln::test::skip_if(no_split_toolchain)) {
  SplitStore &store = orin_store();
  const fs::path entry = store.kernels.entry_dir;
  const auto meta = nlohmann::json::parse(read_text(entry / "meta.json"));
  CHECK(meta["kind"] == "images");
  std::vector<std::string> images;
  for (const auto &image : meta["images"]) {
    const std::string file = image["file"];
    images.push_back(image["arch"].get<std::string>() + ":" + image["kind"].get<std::string>());
    const std::string bytes = read_text(entry / file);
    if (image["kind"] == "cubin") {
      REQUIRE(bytes.size() > 20);
      CHECK(bytes.compare(0, 4, "\x7f" "ELF") == 0);
      uint16_t machine = 0;
      std::memcpy(&machine, bytes.data() + 18, sizeof machine);
      CHECK(machine == 190);  // EM_CUDA
    } else if (image["kind"] == "ptx") {
      CHECK(contains(bytes, ".target sm_87"));
      CHECK(contains(bytes, "kiln_ik_solve_kernel"));
    }
  }
  std::sort(images.begin(), images.end());
  MESSAGE("images: " << nlohmann::json(images).dump());
  for (const char *wanted : {"sm_87:cubin", "sm_110:cubin", "sm_90:cubin", "compute_87:ptx"}) {
    CAPTURE(wanted);
    CHECK(std::find(images.begin(), images.end(), wanted) != images.end());
  }
  REQUIRE(meta["kernels"].size() == 1);
  CHECK(meta["kernels"][0]["name"] == "kiln_ik_solve_kernel");
  CHECK(meta["kernels"][0]["lowered_name"] == "kiln_ik_solve_kernel");  // extern "C"
  // The chain the kernels were built from is the nvcc form's (same generator, same URDF).
  CHECK(read_text(entry / "gen" / "kiln_fk_chain.cuh") == read_text(KILN_IK_HEADER_IIWA14));
}

TEST_CASE("ik split: the host part links nothing CUDA (recipe-built and CMake-built)" *
          kiln::test::skip_if(no_split_toolchain)) {
  SplitStore &store = orin_store();
  const fs::path recipe_built = fs::path(store.host.entry_dir) / "libkiln_ik_iiwa14-split.so";
  for (const fs::path &file : {recipe_built, fs::path(KILN_IK_PLUGIN_IIWA14_SPLIT)}) {
    CAPTURE(file.string());
    REQUIRE(fs::is_regular_file(file));
    CHECK_FALSE(file_holds(file, "libcudart"));   // neither NEEDED nor static cudart's symbols
    CHECK_FALSE(file_holds(file, "libcuda.so"));  // the driver comes from the host
    CHECK_FALSE(file_holds(file, "cudaMalloc"));  // no runtime API call at all
    CHECK(file_holds(file, "cuMemAlloc"));        // asked for by name (get_driver_proc)
    CHECK(file_holds(file, kKernels));            // the kernels artifact it names
  }
  // The nvcc form, for contrast, carries static cudart.
  CHECK(file_holds(KILN_IK_PLUGIN_IIWA14, "cudaMalloc"));
}

TEST_CASE("ik split: host part loads for a declared Orin, activate(-1) solves like the nvcc form, self-test passes" *
          kiln::test::skip_if(no_split_toolchain)) {
  SplitStore &store = orin_store();
  kiln::test::ik::LoadedPlugin nvcc_form(KILN_IK_PLUGIN_IIWA14);  // declared sm_90: its archs
  kiln::Instance reference = nvcc_form.module->create_instance();
  reference.activate(-1, 64);
  const Outcome expected = solve_random(*ik_of(reference), reference.handle(), 64, 5);
  CHECK(expected.good == 64);

  kiln::Module recipe_built = store.runtime->ensure(kiln::Recipe::load(recipe_file(kHostPart)));
  kiln::Module cmake_built = store.publish_cmake_host_part();
  for (kiln::Module *module : {&recipe_built, &cmake_built}) {
    CAPTURE(module->report().resolution.name);
    CHECK(module->report().plugin_id == "org.kiln.ik.iiwa14");
    CHECK(module->report().interfaces == std::vector<std::string>{KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID,
                                                                  KILN_ROBOTMODEL_INTERFACE_ID});
    kiln::Instance instance = module->create_instance();
    const kiln_ik_v1 *ik = ik_of(instance);
    REQUIRE(ik != nullptr);
    CHECK(ik->dof(instance.handle()) == 7);
    instance.activate(-1, 64);  // host only: no driver, no kernels artifact asked for
    const Outcome got = solve_random(*ik, instance.handle(), 64, 5);
    MESSAGE("split host path: " << got.good << " / 64 within 1 mm / 0.01 rad, mean iterations " << got.mean_iterations);
    CHECK(got.good == 64);
    CHECK(got.reported == 64);
    CHECK(got.worst_report_mismatch < 1e-4);
    // One host-path source for both forms: the same answers, bit for bit.
    CHECK(got.q == expected.q);
    CHECK(got.iterations == expected.iterations);
    const auto *selftest = instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
    REQUIRE(selftest != nullptr);
    char message[512] = "";
    CHECK_MESSAGE(selftest->run(instance.handle(), message, sizeof message) == KILN_OK, message);
  }
}

TEST_CASE("ik split: warm-start state moves between the nvcc form and the split form (one chain tag)" *
          kiln::test::skip_if(no_split_toolchain)) {
  SplitStore &store = orin_store();
  kiln::test::ik::Solver nvcc_form(KILN_IK_PLUGIN_IIWA14, -1, 8);
  solve_random(*nvcc_form.ik, nvcc_form.instance.handle(), 8, 11);
  std::vector<unsigned char> blob;
  REQUIRE(nvcc_form.export_state(blob) == KILN_OK);
  kiln::Module split = store.publish_cmake_host_part();
  kiln::Instance instance = split.create_instance();
  instance.activate(-1, 8);
  char message[512] = "";
  REQUIRE_MESSAGE(split.entry().import_state(instance.handle(), blob.data(), blob.size(), message, sizeof message) ==
                      KILN_OK,
                  message);
  std::vector<unsigned char> back(blob.size());
  size_t size = 0;
  REQUIRE(split.entry().export_state(instance.handle(), back.data(), back.size(), &size, message, sizeof message) ==
          KILN_OK);
  back.resize(size);
  CHECK(back == blob);
}

TEST_CASE("ik split: activate on device 0 without a driver is KILN_ERR_DEVICE naming the kernels artifact" *
          kiln::test::skip_if(no_split_toolchain) * kiln::test::skip_if(kiln::test::cuda_driver)) {
  SplitStore &store = orin_store();
  kiln::Module split = store.publish_cmake_host_part();
  kiln::Instance instance = split.create_instance();
  try {
    instance.activate(0, 8);
    FAIL("activate(0) succeeded without a driver");
  } catch (const kiln::Error &error) {
    const std::string what = error.what();
    CAPTURE(what);
    CHECK(contains(what, "kiln-ik/iiwa14-split-kernels"));
    CHECK(contains(what, "kiln_ik_solve_kernel"));
    CHECK(contains(what, "status 4"));  // KILN_ERR_DEVICE
    CHECK(contains(what, "libcuda"));
  }
  // Still usable host only afterwards.
  instance.activate(-1, 8);
  CHECK(solve_random(*ik_of(instance), instance.handle(), 8, 3).good == 8);
}
