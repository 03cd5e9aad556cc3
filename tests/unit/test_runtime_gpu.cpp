// On a real GPU: doctor sees the live device; publish + load of the nvcc-built example plugin
// runs its kernel with the right numbers (on sm_90, its SASS); the same source built for sm_87
// only is refused.
#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>

#include "device/discover.hpp"
#include "support/fixtures.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"

using namespace kiln;
using kiln::test::TempDir;

namespace {

// A precondition (support/preconditions.hpp): sm_87 code is not refused on an sm_87 device.
std::optional<std::string> device_is_sm_87() {
  if (const auto none = kiln::test::no_gpu()) return none;
  if (kiln::device::discover(std::nullopt).devices.front().arch_name() != "sm_87") return std::nullopt;
  return std::string("device 0 is sm_87: the sm_87 refusal cannot be reached");
}

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("gpu: doctor --json shows the live device with CC, UUID and driver version") {
    TempDir dir;
    const auto result = kiln::test::run_kiln({"doctor", "--json"}, {{"KILN_CACHE_DIR", (dir / "c").string()},
                                                                    {"KILN_DEVICE", ""}});
    REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    const auto out = nlohmann::json::parse(result.out);
    REQUIRE(out["driver"]["state"] == "ok");
    const auto &device = out["driver"]["devices"][0];
    MESSAGE("doctor: " << device.dump());
    CHECK(device["cc_major"].get<int>() >= 7);
    CHECK(device["uuid"].get<std::string>().rfind("GPU-", 0) == 0);
    CHECK(device["uuid"].get<std::string>().size() == 40);
    CHECK(device["driver_version"].get<int>() >= 12000);
    CHECK(device["total_memory"].get<std::uint64_t>() > 0);
  }

  TEST_CASE("gpu: publish + load runs the example kernel on the live device" * kiln::test::skip_if(kiln::test::not_sm_90)) {
    TempDir dir;
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    Runtime runtime(options);
    REQUIRE(runtime.devices().state == DriverState::ok);
    PublishRequest request;
    request.consumer = "tests";
    request.name = "example";
    request.artifact_file = KILN_TEST_PLUGIN_EXAMPLE;
    request.archs = {Arch::parse("sm_90")};
    runtime.publish(request);

    Module module = runtime.load("tests", "example");
    CHECK(module.report().compatibility.image->to_string() == "sm_90");
    Instance instance = module.create_instance();
    const std::uint32_t n = 1 << 20;
    instance.activate(0, n);
    const auto *example = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
    REQUIRE(example != nullptr);
    std::vector<float> x(n), y(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      x[i] = static_cast<float>(i % 1000) * 0.5f;
      y[i] = 1.0f - static_cast<float>(i % 7);
    }
    const std::vector<float> y0 = y;
    char message[512] = "";
    REQUIRE_MESSAGE(example->saxpy(instance.handle(), 3.0f, x.data(), y.data(), n, message, sizeof message) == KILN_OK,
                    message);
    std::uint32_t wrong = 0;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (std::fabs(y[i] - (3.0f * x[i] + y0[i])) > 1e-4f) ++wrong;
    }
    CHECK(wrong == 0);
    CHECK(example->last_device_arch(instance.handle()) == 90);
  }

  TEST_CASE("gpu: the example plugin built for sm_87 only is refused on the live device" *
            kiln::test::skip_if(device_is_sm_87)) {
    TempDir dir;
    RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    Runtime runtime(options);
    REQUIRE(runtime.devices().state == DriverState::ok);
    const DeviceIdentity &device = runtime.devices().devices.front();
    PublishRequest request;
    request.consumer = "tests";
    request.name = "example87";
    request.artifact_file = KILN_TEST_PLUGIN_EXAMPLE_SM87;  // its archs: what the file holds
    runtime.publish(request);
    try {
      runtime.load("tests", "example87");
      FAIL("sm_87 code loaded on " << device.arch_name());
    } catch (const IncompatibleError &error) {
      MESSAGE("refusal: " << std::string(error.what()));
      REQUIRE(!error.reasons().empty());
      CHECK(error.reasons()[0].field == "cuda_arch");
      CHECK(error.reasons()[0].recorded == "sm_87");
      CHECK(error.reasons()[0].current == device.arch_name());
    }
  }
}
