// Device discovery: declared devices, the driver's failure states, the live devices (suite gpu).
#include <doctest/doctest.h>

#include <cuda.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <kiln/identity.hpp>

#include "device/discover.hpp"
#include "device/driver.hpp"
#include "artifact/identity_json.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"

namespace {

constexpr const char *kStub = "/usr/local/cuda/lib64/stubs/libcuda.so";

// Sets or clears an environment variable for one scope; the singleton must not see leftovers.
class EnvGuard {
 public:
  EnvGuard(const char *name, const char *value) : name_(name) {
    const char *old = std::getenv(name);
    if (old != nullptr) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~EnvGuard() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  EnvGuard(const EnvGuard &) = delete;
  EnvGuard &operator=(const EnvGuard &) = delete;

 private:
  const char *name_;
  std::optional<std::string> old_;
};

using kiln::test::contains;

bool is_uuid(const std::string &text) {
  if (text.size() != 40 || text.compare(0, 4, "GPU-") != 0) return false;
  for (std::size_t i = 4; i < text.size(); ++i) {
    const bool dash = i == 12 || i == 17 || i == 22 || i == 27;
    const char c = text[i];
    if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

}  // namespace

TEST_CASE("declared devices: defaults by arch") {
  const auto orin = kiln::parse_declared_device("sm_87");
  CHECK(orin.declared);
  CHECK(orin.cc_major == 8);
  CHECK(orin.cc_minor == 7);
  CHECK(orin.integrated);
  CHECK(orin.driver_version == CUDA_VERSION);
  CHECK(orin.name == "declared sm_87");
  CHECK(orin.uuid.empty());
  CHECK(orin.arch_name() == "sm_87");

  struct Row {
    const char *text;
    int major, minor;
    bool integrated;
  };
  const Row rows[] = {{"sm_75", 7, 5, false},  {"sm_80", 8, 0, false},  {"sm_86", 8, 6, false},
                      {"sm_90", 9, 0, false},  {"sm_100", 10, 0, false}, {"sm_101", 10, 1, true},
                      {"sm_110", 11, 0, true}, {"sm_120", 12, 0, false}, {"sm_121", 12, 1, true},
                      {" sm_90 ", 9, 0, false}};
  for (const auto &row : rows) {
    CAPTURE(row.text);
    const auto device = kiln::parse_declared_device(row.text);
    CHECK(device.cc_major == row.major);
    CHECK(device.cc_minor == row.minor);
    CHECK(device.integrated == row.integrated);
  }
}

TEST_CASE("declared devices: every key") {
  const auto orin =
      kiln::parse_declared_device("sm_87,driver=12060,integrated=1,name=Orin,sm_count=16,memory=8G");
  CHECK(orin.driver_version == 12060);
  CHECK(orin.integrated);
  CHECK(orin.name == "Orin");
  CHECK(orin.sm_count == 16);
  CHECK(orin.total_memory == 8ull << 30);

  CHECK(kiln::parse_declared_device("sm_87,integrated=0").integrated == false);
  CHECK(kiln::parse_declared_device("sm_90,integrated=true").integrated == true);
  CHECK(kiln::parse_declared_device("sm_90, driver = 12.6 ").driver_version == 12060);
  CHECK(kiln::parse_declared_device("sm_90,driver=13.0").driver_version == 13000);
  CHECK(kiln::parse_declared_device("sm_90,memory=512MiB").total_memory == 512ull << 20);
  CHECK(kiln::parse_declared_device("sm_90,memory=141GB").total_memory == 141ull << 30);
  CHECK(kiln::parse_declared_device("sm_90,memory=1t").total_memory == 1ull << 40);
  CHECK(kiln::parse_declared_device("sm_90,memory=1000").total_memory == 1000);
  CHECK(kiln::parse_declared_device("sm_90,name=H200 NVL").name == "H200 NVL");
}

TEST_CASE("declared devices: bad text is refused, naming the text and the problem") {
  struct Row {
    const char *text;
    const char *expect;
  };
  const Row rows[] = {
      {"", "the arch is missing"},
      {",driver=13000", "the arch is missing"},
      {"orin", "invalid arch \"orin\""},
      {"sm_70", "CUDA 13 no longer targets"},
      {"compute_87", "written sm_87 (no compute_, no a or f suffix)"},
      {"sm_90a", "written sm_90 (no compute_"},
      {"sm_100f", "written sm_100 (no compute_"},
      {"sm_87,foo=1", "unknown key \"foo\""},
      {"sm_87,Driver=12060", "unknown key \"Driver\""},
      {"sm_87,driver=abc", "driver=abc is not a CUDA driver version"},
      {"sm_87,driver=12", "driver=12 is not a CUDA driver version"},
      {"sm_87,driver=-12060", "is not a CUDA driver version"},
      {"sm_87,driver=12.-748364887", "is not a CUDA driver version"},  // found by fuzzing: minor * 10 overflowed
      {"sm_87,integrated=2", "integrated=2 is not 0 or 1"},
      {"sm_87,sm_count=0", "sm_count=0 is not a positive number"},
      {"sm_87,sm_count=x", "sm_count=x is not a positive number"},
      {"sm_87,memory=8X", "memory=8X is not a size"},
      {"sm_87,memory=G", "memory=G is not a size"},
      {"sm_87,memory=0", "memory=0 is not a size"},
      {"sm_87,memory=99999999999T", "is not a size"},
      {"sm_87,name=", "name= is empty"},
      {"sm_87,driver=12060,driver=13000", "key \"driver\" is given twice"},
      {"sm_87,", "item \"\" is not key=value"},
      {"sm_87,driver", "item \"driver\" is not key=value"},
      {"sm_87,=3", "is not key=value"},
      {"sm_87 sm_90", "invalid arch"},
  };
  for (const auto &row : rows) {
    CAPTURE(row.text);
    try {
      kiln::parse_declared_device(row.text);
      FAIL("accepted");
    } catch (const kiln::UsageError &error) {
      const std::string message = error.what();
      CAPTURE(message);
      CHECK(contains(message, std::string("declared device \"") + row.text + "\""));
      CHECK(contains(message, row.expect));
      CHECK(contains(message, "e.g. \"sm_87,driver=12060,integrated=1,name=Orin,sm_count=16,memory=8G\""));
    }
  }
}

TEST_CASE("Driver: a missing library is no_driver with a clear detail") {
  const EnvGuard env("KILN_LIBCUDA", "/nonexistent/libcuda.so.1");
  CHECK(kiln::device::Driver::default_path() == "/nonexistent/libcuda.so.1");
  kiln::device::Driver driver(kiln::device::Driver::default_path());
  CHECK(driver.state() == kiln::DriverState::no_driver);
  CHECK_FALSE(driver.ok());
  CHECK(driver.library() == "/nonexistent/libcuda.so.1");
  CHECK(driver.driver_version() == 0);
  CHECK(driver.device_count() == 0);
  const std::string &detail = driver.detail();
  CAPTURE(detail);
  CHECK(contains(detail, "/nonexistent/libcuda.so.1"));
  CHECK(contains(detail, "(from KILN_LIBCUDA)"));
  CHECK(contains(detail, "KILN_DEVICE=sm_87"));
  CHECK(driver.proc("cuInit") == nullptr);
  CHECK(driver.proc("cuLibraryLoadData") == nullptr);
  CHECK((driver.api().init == nullptr));
  // Without a driver the built-in table names errors.
  CHECK(driver.error_text(CUDA_ERROR_NOT_FOUND) == "CUDA_ERROR_NOT_FOUND (500): named symbol not found");
}

namespace {

// A precondition (support/preconditions.hpp).
std::optional<std::string> driver_library_installed() {
  const kiln::device::Driver driver("libcuda.so.1");
  if (driver.state() == kiln::DriverState::no_driver) return std::nullopt;
  return "a CUDA driver library is installed here (" + driver.detail() + "): its absence cannot be reached";
}

}  // namespace

TEST_CASE("Driver: the default soname, missing here, says there is no NVIDIA driver" *
          kiln::test::skip_if(driver_library_installed)) {
  const EnvGuard env("KILN_LIBCUDA", nullptr);
  CHECK(kiln::device::Driver::default_path() == "libcuda.so.1");
  const EnvGuard empty("KILN_LIBCUDA", "");
  CHECK(kiln::device::Driver::default_path() == "libcuda.so.1");
  kiln::device::Driver driver("libcuda.so.1");
  CHECK(driver.state() == kiln::DriverState::no_driver);
  CHECK(contains(driver.detail(), "libcuda.so.1 not found: no NVIDIA driver on this machine"));
  CHECK(contains(driver.detail(), "set KILN_DEVICE=sm_87"));
}

TEST_CASE("Driver: the toolkit's link stub is stub_library" * kiln::test::skip_if(kiln::test::no_cuda_stub)) {
  const EnvGuard env("KILN_LIBCUDA", kStub);
  kiln::device::Driver driver(kiln::device::Driver::default_path());
  CHECK(driver.state() == kiln::DriverState::stub_library);
  const std::string &detail = driver.detail();
  CAPTURE(detail);
  CHECK(contains(detail, kStub));
  CHECK(contains(detail, "link stub"));
  CHECK(contains(detail, "CUDA_ERROR_STUB_LIBRARY (34)"));
  CHECK(contains(detail, "KILN_LIBCUDA"));
  CHECK(driver.proc("cuInit") == nullptr);
  CHECK(driver.proc("cuLibraryLoadData") == nullptr);
  CHECK(driver.device_count() == 0);

  const auto report = kiln::device::discover(driver, std::string("sm_87"));
  CHECK(report.state == kiln::DriverState::stub_library);
  CHECK(report.library == kStub);
  CHECK(report.devices.empty());
}

TEST_CASE("Driver: a library that is not a driver") {
  // libdl / libc has no cuGetProcAddress_v2.
  kiln::device::Driver driver("libc.so.6");
  CHECK(driver.state() == kiln::DriverState::init_failed);
  CHECK(contains(driver.detail(), "has no cuGetProcAddress_v2"));
  CHECK(driver.proc("cuInit") == nullptr);
}

TEST_CASE("Driver::builtin_error_text") {
  using kiln::device::Driver;
  CHECK(Driver::builtin_error_text(CUDA_SUCCESS) == "CUDA_SUCCESS (0): no error");
  CHECK(Driver::builtin_error_text(CUDA_ERROR_STUB_LIBRARY) ==
        "CUDA_ERROR_STUB_LIBRARY (34): CUDA driver is a stub library");
  CHECK(Driver::builtin_error_text(CUDA_ERROR_UNSUPPORTED_PTX_VERSION) ==
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222): the provided PTX was compiled with an "
        "unsupported toolchain");
  CHECK(Driver::builtin_error_text(CUDA_ERROR_NO_BINARY_FOR_GPU).rfind("CUDA_ERROR_NO_BINARY_FOR_GPU (209)", 0) == 0);
  CHECK(Driver::builtin_error_text(CUDA_ERROR_KEY_ROTATION) == "CUDA_ERROR_KEY_ROTATION (916)");
  CHECK(Driver::builtin_error_text(static_cast<CUresult>(1000)) == "CUDA error 1000");
  CHECK(kiln::device::driver_version_text(12060) == "12.6");
  CHECK(kiln::device::driver_version_text(13000) == "13.0");
  CHECK(kiln::device::driver_version_text(0) == "unknown");
}

TEST_CASE("discover: a declared device stands in where no driver exists") {
  kiln::device::Driver missing("/nonexistent/libcuda.so.1");
  const auto report = kiln::device::discover(missing, std::string("sm_87,name=Orin"));
  CHECK(report.state == kiln::DriverState::no_driver);
  CHECK(report.devices.empty());
  REQUIRE(report.declared.has_value());
  CHECK(report.declared->name == "Orin");
  const auto effective = report.effective();
  REQUIRE(effective.size() == 1);
  CHECK(effective[0].arch_name() == "sm_87");
  CHECK(effective[0].declared);

  CHECK_THROWS_AS(kiln::device::discover(missing, std::string("sm_87,bogus=1")), kiln::UsageError);
  CHECK(kiln::device::discover(missing, std::nullopt).effective().empty());

  const auto report_json = kiln::artifact::to_json(report);
  CHECK(report_json["state"] == "no_driver");
  CHECK(report_json["library"] == "/nonexistent/libcuda.so.1");
  CHECK(report_json["devices"].empty());
  CHECK(report_json["declared"]["arch"] == "sm_87");
  CHECK(report_json["declared"]["integrated"] == true);
  CHECK(report_json["declared"]["declared"] == true);
  CHECK(report_json["declared"]["driver_version"] == CUDA_VERSION);
}

TEST_CASE("DeviceReport::effective: the declared device overrides live ones") {
  kiln::DeviceReport report;
  report.devices.resize(2);
  report.devices[1].ordinal = 1;
  CHECK(report.effective().size() == 2);
  report.declared = kiln::parse_declared_device("sm_90");
  REQUIRE(report.effective().size() == 1);
  CHECK(report.effective()[0].declared);
}

TEST_CASE("Driver::instance is one object, created once across threads") {
  // Under a clean environment the singleton opens the system driver (absent on CI boxes).
  std::vector<kiln::device::Driver *> seen(8, nullptr);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < seen.size(); ++i) {
    threads.emplace_back([&seen, i] { seen[i] = &kiln::device::Driver::instance(); });
  }
  for (auto &thread : threads) thread.join();
  for (auto *driver : seen) CHECK(driver == seen[0]);
  CHECK(&kiln::device::Driver::instance() == seen[0]);
  CHECK_FALSE(seen[0]->detail().empty());
}

TEST_SUITE("gpu") {
  TEST_CASE("live devices through the CUDA driver") {
    const auto report = kiln::device::discover(std::nullopt);
    INFO(report.detail);
    REQUIRE(report.state == kiln::DriverState::ok);
    REQUIRE_FALSE(report.devices.empty());
    CHECK(report.driver_version >= 12000);
    const auto host = kiln::HostRequirements::current();
    for (std::size_t i = 0; i < report.devices.size(); ++i) {
      const auto &device = report.devices[i];
      CAPTURE(i);
      CAPTURE(device.name);
      MESSAGE("device " << i << ": " << kiln::artifact::to_json(device).dump());
      CHECK(device.ordinal == static_cast<int>(i));
      CHECK_FALSE(device.declared);
      CHECK_FALSE(device.name.empty());
      CHECK(device.cc_major > 0);
      CHECK(device.cc_minor >= 0);
      CHECK(is_uuid(device.uuid));
      CHECK(device.total_memory > 0);
      CHECK(device.driver_version >= 12000);
      CHECK(device.driver_version == report.driver_version);
      CHECK(device.sm_count > 0);
      CHECK(device.pci_device_id >= 0);
      CHECK(contains(device.pci_bus_id, ":"));
      // Its own exact SASS runs on it.
      kiln::ArtifactIdentity artifact;
      artifact.key_schema = host.key_schema;
      artifact.artifact_schema = host.artifact_schema;
      artifact.archs = {kiln::Arch::parse(device.arch_name())};
      const auto result = kiln::check_compatibility(artifact, host, &device);
      CHECK(result.ok);
      REQUIRE(result.image.has_value());
      CHECK(result.image->to_string() == device.arch_name());
    }
    // UUIDs are unique per device.
    for (std::size_t i = 0; i < report.devices.size(); ++i) {
      for (std::size_t j = i + 1; j < report.devices.size(); ++j) {
        CHECK(report.devices[i].uuid != report.devices[j].uuid);
      }
    }
  }

  TEST_CASE("the driver hands out later modules' entry points") {
    auto &driver = kiln::device::Driver::instance();
    REQUIRE(driver.ok());
    CHECK(driver.lookup_version() <= CUDA_VERSION);
    for (const char *name : {"cuLibraryLoadData", "cuLibraryGetKernel", "cuDevicePrimaryCtxRetain",
                             "cuCtxSetCurrent", "cuLaunchKernel", "cuLibraryUnload",
                             "cuKernelGetFunction", "cuDeviceGetUuid", "cuDeviceTotalMem"}) {
      CAPTURE(name);
      void *first = driver.proc(name);
      CHECK(first != nullptr);
      CHECK(driver.proc(name) == first);
    }
    CHECK(driver.proc("cuNoSuchEntryPoint") == nullptr);
    CHECK(driver.error_text(CUDA_ERROR_NOT_FOUND).rfind("CUDA_ERROR_NOT_FOUND (500): ", 0) == 0);
    // A typed fetch works as the loader will use it.
    auto get_count = driver.proc_as<decltype(&::cuDeviceGetCount)>("cuDeviceGetCount");
    REQUIRE((get_count != nullptr));
    int count = 0;
    CHECK(get_count(&count) == CUDA_SUCCESS);
    CHECK(count == driver.device_count());
  }

  TEST_CASE("a private driver on the system library agrees with the singleton") {
    kiln::device::Driver driver("libcuda.so.1");
    INFO(driver.detail());
    REQUIRE(driver.ok());
    CHECK(driver.device_count() == kiln::device::Driver::instance().device_count());
    CHECK(driver.driver_version() == kiln::device::Driver::instance().driver_version());
  }
}
