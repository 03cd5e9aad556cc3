// The JIT backend (NVRTC / nvJitLink / nvFatbin through dlopen), device-image choice and
// validation, the kiln.host.kernels/1 C table; and in suite "gpu": JIT build -> load -> run,
// refusals of wrong-arch, mislabelled and damaged images.
#include <doctest/doctest.h>

#include <cuda.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/ext/host_kernels.h>
#include <kiln/identity.hpp>
#include <kiln/kernels.hpp>
#include <kiln/version.hpp>

#include "builder/backends/nvrtc/toolchain.hpp"
#include "device/discover.hpp"
#include "device/driver.hpp"
#include "load/device_images.hpp"
#include "load/host_kernels.hpp"
#include "support/fixtures.hpp"
#include "support/gpu_saxpy.hpp"
#include "support/machine.hpp"
#include "support/preconditions.hpp"
#include "support/checks.hpp"
#include "support/fake_host.hpp"

using kiln::Arch;
using kiln::DeviceImage;
using kiln::builder::NvrtcRequest;
using kiln::builder::JitResult;
using kiln::builder::NvrtcToolchain;

namespace {

// saxpy (extern "C") and a template (a C++ name expression), a header by content, a define.
constexpr const char *kKernels = R"(#include "kiln_test_scale.h"
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i] + KILN_TEST_OFFSET;
}
template <typename T>
__global__ void scale(T *v, T factor, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) v[i] = v[i] * factor * kiln_test_unit();
}
)";
constexpr const char *kHeader = "__device__ inline float kiln_test_unit() { return 1.0f; }\n";

NvrtcRequest saxpy_request(const char *archs) {
  NvrtcRequest request;
  request.sources = {{"kernels.cu", kKernels}};
  request.headers = {{"kiln_test_scale.h", kHeader}};
  request.defines = {"KILN_TEST_OFFSET=0.0f"};
  request.archs = Arch::parse_list(archs);
  request.kernels = {"saxpy", "scale<float>"};
  return request;
}

NvrtcToolchain &toolchain() {
  NvrtcToolchain &tc = NvrtcToolchain::instance();
  INFO(tc.nvrtc().detail);
  REQUIRE(tc.nvrtc().found);
  return tc;
}

using kiln::test::contains;

bool is_elf(const std::string &bytes) { return bytes.size() > 4 && bytes.compare(0, 4, "\x7f" "ELF") == 0; }

using kiln::test::make_device;

DeviceImage image_of(const char *arch, std::string bytes = "x") {
  DeviceImage image;
  image.arch = Arch::parse(arch);
  image.kind = image.arch.kind == Arch::Kind::sass ? "cubin" : "ptx";
  image.bytes = std::move(bytes);
  return image;
}

DeviceImage fatbin_of(const char *archs) {
  DeviceImage image;
  image.kind = "fatbin";
  image.contains = Arch::parse_list(archs);
  image.arch = image.contains.front();
  image.bytes = "x";
  return image;
}

// A structurally valid fatbin header around `payload` bytes (for validation only).
std::string fake_fatbin(std::uint64_t declared, std::size_t payload) {
  std::string bytes(16 + payload, '\0');
  const std::uint32_t magic = 0xBA55ED50u;
  const std::uint16_t version = 1, header = 16;
  std::memcpy(&bytes[0], &magic, 4);
  std::memcpy(&bytes[4], &version, 2);
  std::memcpy(&bytes[6], &header, 2);
  std::memcpy(&bytes[8], &declared, 8);
  return bytes;
}

using kiln::test::error_of;

}  // namespace

// --- the toolchain --------------------------------------------------------------------------

TEST_CASE("jit: NVRTC, nvJitLink and nvFatbin are opened with dlopen; versions; doctor") {
  NvrtcToolchain &tc = toolchain();
  CHECK(tc.nvrtc().version >= 12000);
  CHECK(contains(tc.nvrtc().path, "nvrtc"));
  CHECK(contains(tc.nvrtc().detail, tc.nvrtc().version_text()));
  CHECK_FALSE(tc.supported_archs().empty());
  CHECK(std::find(tc.supported_archs().begin(), tc.supported_archs().end(), 90) != tc.supported_archs().end());
  const auto doctor = tc.describe();
  CHECK(doctor["nvrtc"]["found"] == true);
  CHECK(doctor["nvrtc"]["version"] == tc.nvrtc().version_text());
  CHECK(doctor["nvjitlink"].contains("searched"));
  CHECK(doctor["nvfatbin"].contains("detail"));
  CHECK(doctor["supported_archs"].is_array());
  CHECK(tc.identity().rfind("nvrtc=" + tc.nvrtc().version_text() + ";nvjitlink=", 0) == 0);
  MESSAGE("NVRTC: " << tc.nvrtc().detail << " | nvJitLink: " << tc.nvjitlink().detail
                    << " | nvFatbin: " << tc.nvfatbin().detail);
}

TEST_CASE("jit: the search: env alone when set, else sonames, then $CUDA_HOME, $CUDA_PATH, /usr/local/cuda") {
  {
    kiln::test::ScopedEnv nvrtc("KILN_NVRTC", std::nullopt);
    kiln::test::ScopedEnv home("CUDA_HOME", std::string("/opt/kiln-test-cuda"));
    kiln::test::ScopedEnv path("CUDA_PATH", std::nullopt);
    const auto search = kiln::builder::NvrtcSearch::from_environment();
    CHECK(search.nvrtc_env.empty());
    const std::vector<std::string> expected = {
        "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
        "/opt/kiln-test-cuda/lib64/libnvrtc.so.13", "/opt/kiln-test-cuda/lib64/libnvrtc.so.12",
        "/opt/kiln-test-cuda/lib64/libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so.13",
        "/usr/local/cuda/lib64/libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"};
    CHECK(search.nvrtc == expected);
    CHECK(search.nvjitlink.front() == "libnvJitLink.so.13");
    CHECK(search.nvfatbin.back() == "/usr/local/cuda/lib64/libnvfatbin.so");
  }
  // The toolkit's lib64 alone (as on a machine whose loader path lacks it) finds NVRTC.
  kiln::builder::NvrtcSearch lib64 = kiln::builder::NvrtcSearch::from_environment();
  const auto paths_only = [](std::vector<std::string> list) {
    list.erase(std::remove_if(list.begin(), list.end(),
                              [](const std::string &c) { return c.find('/') == std::string::npos; }),
               list.end());
    return list;
  };
  lib64.nvrtc = paths_only(lib64.nvrtc);
  lib64.nvjitlink = paths_only(lib64.nvjitlink);
  NvrtcToolchain fallback(lib64);
  INFO(fallback.nvrtc().detail);
  REQUIRE(fallback.nvrtc().found);
  CHECK(fallback.nvrtc().path.find("/lib64/libnvrtc.so") != std::string::npos);
  CHECK(fallback.compile(saxpy_request("sm_90")).images.size() == 1);
  if (fallback.nvjitlink().found) CHECK(fallback.nvjitlink().path.find("/lib64/") != std::string::npos);
}

TEST_CASE("jit: NVRTC compiles for sm_90, sm_87 and compute_90 without a GPU") {
  NvrtcToolchain &tc = toolchain();
  const JitResult result = tc.compile(saxpy_request("sm_90,sm_87,compute_90"));
  REQUIRE(result.images.size() == 3);
  CHECK(result.images[0].kind == "cubin");
  CHECK(result.images[0].arch.to_string() == "sm_90");
  CHECK(is_elf(result.images[0].bytes));
  CHECK(result.images[1].kind == "cubin");
  CHECK(result.images[1].arch.to_string() == "sm_87");
  CHECK(is_elf(result.images[1].bytes));
  CHECK(result.images[0].bytes != result.images[1].bytes);
  CHECK(result.images[2].kind == "ptx");
  CHECK(result.images[2].arch.to_string() == "compute_90");
  const std::string &ptx = result.images[2].bytes;
  CHECK(contains(ptx, ".target sm_90"));
  CHECK(contains(ptx, ".version"));
  CHECK(contains(ptx, ".entry saxpy"));
  CHECK(ptx.back() != '\0');
  for (const auto &image : result.images) CHECK_NOTHROW(kiln::load::validate_image(image));

  REQUIRE(result.kernels.size() == 2);
  CHECK(result.kernels[0].name == "saxpy");
  CHECK(result.kernels[0].lowered_name == "saxpy");
  CHECK(result.kernels[1].name == "scale<float>");
  CHECK(result.kernels[1].lowered_name.rfind("_Z", 0) == 0);
  CHECK(contains(ptx, result.kernels[1].lowered_name));

  REQUIRE(result.steps.size() == 3);
  CHECK(result.steps[0].what == "nvrtc kernels.cu sm_90");
  CHECK(result.steps[2].what == "nvrtc kernels.cu compute_90");
  CHECK(result.total_ms > 0);
  CHECK(result.nvrtc_version == tc.nvrtc().version);
  CHECK(result.nvjitlink_version == 0);
  MESSAGE("3 archs in " << result.total_ms << " ms; sm_90 step " << result.steps[0].ms << " ms");

  const kiln::KernelImages set = result.kernel_images("tests/saxpy");
  CHECK(set.kernels == std::vector<std::string>{"saxpy", result.kernels[1].lowered_name});
  CHECK(set.cuda_toolkit_version == tc.nvrtc().version);
  CHECK(set.label == "tests/saxpy");
  CHECK(set.images.size() == 3);
}

TEST_CASE("jit: a compile error is a BuildError whose log names the source and the line") {
  NvrtcToolchain &tc = toolchain();
  NvrtcRequest request;
  request.sources = {{"broken.cu", "extern \"C\" __global__ void k(float *x) {\n  x[0] = 1.0f;\n"
                                   "  undefined_thing(x);\n}\n"}};
  request.archs = {Arch::parse("sm_90")};
  request.kernels = {"k"};
  try {
    tc.compile(request);
    FAIL("expected a BuildError");
  } catch (const kiln::BuildError &error) {
    const std::string what = error.what();
    CAPTURE(what);
    CAPTURE(error.log());
    CHECK(error.kind() == kiln::ErrorKind::build);
    CHECK(error.exit_code() == 7);
    CHECK(contains(what, "broken.cu"));
    CHECK(contains(what, "sm_90"));
    CHECK(contains(what, "undefined_thing"));
    CHECK(contains(error.log(), "broken.cu(3)"));
    CHECK(contains(error.log(), "undefined_thing"));
  }
}

TEST_CASE("jit: headers go by content; defines reach the compiler") {
  NvrtcToolchain &tc = toolchain();
  // A header that is not handed over is not found anywhere else.
  NvrtcRequest request = saxpy_request("sm_90");
  request.headers.clear();
  try {
    tc.compile(request);
    FAIL("expected a BuildError");
  } catch (const kiln::BuildError &error) {
    CAPTURE(error.log());
    CHECK(contains(error.log(), "kiln_test_scale.h"));
  }
  // A define the source requires.
  NvrtcRequest defines;
  defines.sources = {{"needs.cu", "#ifndef KILN_NEEDED\n#error KILN_NEEDED is missing\n#endif\n"
                                  "extern \"C\" __global__ void k(int *x) { x[0] = KILN_NEEDED; }\n"}};
  defines.archs = {Arch::parse("compute_90")};
  CHECK(contains(error_of([&] { tc.compile(defines); }), "KILN_NEEDED is missing"));
  defines.defines = {"KILN_NEEDED=42"};
  const JitResult result = tc.compile(defines);
  REQUIRE(result.images.size() == 1);
  CHECK(contains(result.images[0].bytes, "42"));
  CHECK(result.kernels.empty());
}

TEST_CASE("jit: requests kiln refuses, each with the reason") {
  NvrtcToolchain &tc = toolchain();
  const auto refused = [&](const NvrtcRequest &request, const char *part) {
    kiln::ErrorKind kind = kiln::ErrorKind::other;
    const std::string what = error_of([&] { tc.compile(request); }, &kind);
    CAPTURE(what);
    CHECK(kind == kiln::ErrorKind::usage);
    CHECK(contains(what, part));
  };
  NvrtcRequest request = saxpy_request("sm_90");
  request.sources.clear();
  refused(request, "no source");
  request = saxpy_request("sm_90");
  request.archs.clear();
  refused(request, "no target arch");
  request = saxpy_request("sm_90,compute_90");
  request.archs.push_back(request.archs.front());
  refused(request, "sm_90 twice");
  request = saxpy_request("sm_90");
  request.options = {"-I/usr/include"};
  refused(request, "headers are given by content");
  request.options = {"--include-path=/opt/x"};
  refused(request, "headers are given by content");
  request.options = {"-arch=sm_80"};
  refused(request, "NvrtcRequest::archs");
  request.options = {"-dlto"};
  refused(request, "NvrtcRequest::lto");
  request.options = {"--use-pch"};
  refused(request, "precompiled headers");
  request.options = {"--std=c++17", "--use_fast_math", "-default-device", "-lineinfo"};  // fine
  CHECK_NOTHROW(tc.compile(request));
  request = saxpy_request("sm_90");
  request.defines = {"-DX"};
  refused(request, "malformed");
  request = saxpy_request("sm_90");
  request.kernels = {{"saxpy", "other.cu"}};
  refused(request, "does not have");
  request = saxpy_request("sm_90");
  request.sources.push_back({"second.cu", "__device__ int second() { return 2; }\n"});
  refused(request, "name the source that defines it");
  request = saxpy_request("sm_90");
  Arch old;  // sm_70: CUDA 13's NVRTC no longer compiles for Volta
  old.major = 7;
  old.minor = 0;
  request.archs = {old};
  refused(request, "cannot compile for sm_70");
}

TEST_CASE("jit: two sources are linked per arch by nvJitLink, with LTO and without" *
          kiln::test::skip_if(kiln::test::no_nvjitlink)) {
  NvrtcToolchain &tc = toolchain();
  CHECK(tc.nvjitlink().version >= 12000);
  NvrtcRequest request;
  request.sources = {
      {"apply.cu", "extern __device__ float twice(float);\n"
                   "extern \"C\" __global__ void apply(float *v, int n) {\n"
                   "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                   "  if (i < n) v[i] = twice(v[i]);\n}\n"},
      {"twice.cu", "__device__ float twice(float x) { return 2.0f * x; }\n"}};
  request.kernels = {{"apply", "apply.cu"}};
  request.archs = Arch::parse_list("sm_90,compute_90");
  request.lto = true;
  const JitResult lto = tc.compile(request);
  REQUIRE(lto.images.size() == 2);
  CHECK(lto.images[0].kind == "cubin");
  CHECK(is_elf(lto.images[0].bytes));
  CHECK(lto.images[1].kind == "ptx");
  CHECK(contains(lto.images[1].bytes, ".target sm_90"));
  CHECK(contains(lto.images[1].bytes, "apply"));
  CHECK(lto.kernels.at(0).lowered_name == "apply");
  CHECK(lto.nvjitlink_version == tc.nvjitlink().version);
  REQUIRE(lto.steps.size() == 6);  // 2 sources x 2 archs, then 2 links
  CHECK(lto.steps[4].what == "nvJitLink sm_90");
  for (const auto &image : lto.images) CHECK_NOTHROW(kiln::load::validate_image(image));

  request.lto = false;  // relocatable cubins for sm_90; the PTX target still goes through LTO
  const JitResult rdc = tc.compile(request);
  REQUIRE(rdc.images.size() == 2);
  CHECK(is_elf(rdc.images[0].bytes));
  CHECK(contains(rdc.images[1].bytes, ".target sm_90"));

  // An unresolved device function is a link error naming the symbol.
  request.sources.pop_back();
  request.lto = true;
  try {
    tc.compile(request);
    FAIL("expected a BuildError");
  } catch (const kiln::BuildError &error) {
    CAPTURE(error.what());
    CAPTURE(error.log());
    CHECK(contains(error.what(), "nvJitLink"));
    CHECK(contains(std::string(error.what()) + error.log(), "twice"));
  }
}

TEST_CASE("jit: a missing library is a clear status, never a crash") {
  kiln::test::ScopedEnv nvrtc("KILN_NVRTC", std::string("/nonexistent/libnvrtc.so.13"));
  kiln::test::ScopedEnv link("KILN_NVJITLINK", std::string("/nonexistent/libnvJitLink.so.13"));
  kiln::test::ScopedEnv fatbin("KILN_NVFATBIN", std::string("/nonexistent/libnvfatbin.so.13"));
  const auto search = kiln::builder::NvrtcSearch::from_environment();
  CHECK(search.nvrtc == std::vector<std::string>{"/nonexistent/libnvrtc.so.13"});  // no fallback
  CHECK(search.nvrtc_env == "KILN_NVRTC");
  NvrtcToolchain absent(search);
  CHECK_FALSE(absent.nvrtc().found);
  CHECK_FALSE(absent.nvjitlink().found);
  CHECK_FALSE(absent.nvfatbin().found);
  CHECK(absent.nvrtc().version == 0);
  REQUIRE(absent.nvrtc().searched.size() == 1);
  CHECK(contains(absent.nvrtc().detail, "NVRTC not found"));
  CHECK(contains(absent.nvrtc().detail, "/nonexistent/libnvrtc.so.13"));
  CHECK(contains(absent.nvrtc().detail, "KILN_NVRTC"));
  CHECK(contains(absent.nvjitlink().detail, "KILN_NVJITLINK"));
  CHECK(absent.identity() == "nvrtc=none;nvjitlink=none");
  CHECK(absent.describe()["nvrtc"]["found"] == false);

  kiln::ErrorKind kind = kiln::ErrorKind::other;
  const std::string what = error_of([&] { absent.compile(saxpy_request("sm_90")); }, &kind);
  CHECK(kind == kiln::ErrorKind::not_found);
  CHECK(contains(what, "cannot JIT-compile"));
  CHECK(contains(what, "/nonexistent/libnvrtc.so.13"));
  CHECK_FALSE(absent.package_fatbin({image_of("sm_90")}).has_value());

  // A search list that is simply empty, or a file that is not the library.
  kiln::builder::NvrtcSearch none;
  none.nvrtc = {"/etc/hostname"};
  NvrtcToolchain wrong(none);
  CHECK_FALSE(wrong.nvrtc().found);
  CHECK(contains(wrong.nvrtc().searched.at(0), "/etc/hostname: "));
  CHECK_FALSE(wrong.nvjitlink().found);
}

TEST_CASE("jit: NVRTC present but nvJitLink absent: linking requests say what is missing") {
  NvrtcToolchain &real = toolchain();
  auto search = kiln::builder::NvrtcSearch::from_environment();
  search.nvjitlink = {"/nonexistent/libnvJitLink.so"};
  search.nvjitlink_env = "KILN_NVJITLINK";
  NvrtcToolchain partial(search);
  REQUIRE(partial.nvrtc().found);
  CHECK(partial.nvrtc().version == real.nvrtc().version);
  NvrtcRequest request = saxpy_request("sm_90");
  CHECK_NOTHROW(partial.compile(request));  // one source, no LTO: NVRTC alone
  request.lto = true;
  kiln::ErrorKind kind = kiln::ErrorKind::other;
  std::string what = error_of([&] { partial.compile(request); }, &kind);
  CHECK(kind == kiln::ErrorKind::not_found);
  CHECK(contains(what, "LTO was asked for"));
  CHECK(contains(what, "nvJitLink not found"));
}

TEST_CASE("jit: nvFatbin packages cubin + PTX" * kiln::test::skip_if(kiln::test::no_nvfatbin)) {
  NvrtcToolchain &tc = toolchain();
  const JitResult result = tc.compile(saxpy_request("sm_90,compute_90"));
  CHECK_THROWS_AS(tc.package_fatbin({}), kiln::UsageError);
  CHECK_THROWS_AS(tc.package_fatbin({fatbin_of("sm_90")}), kiln::UsageError);
  const auto fatbin = tc.package_fatbin(result.images);
  REQUIRE(fatbin.has_value());
  CHECK(fatbin->kind == "fatbin");
  CHECK(fatbin->contains == Arch::parse_list("sm_90,compute_90"));
  std::uint32_t magic = 0;
  REQUIRE(fatbin->bytes.size() > 16);
  std::memcpy(&magic, fatbin->bytes.data(), 4);
  CHECK(magic == 0xBA55ED50u);
  CHECK_NOTHROW(kiln::load::validate_image(*fatbin));
}

TEST_CASE("jit: without nvFatbin, packaging returns nullopt") {
  const JitResult result = toolchain().compile(saxpy_request("sm_90,compute_90"));
  kiln::test::ScopedEnv off("KILN_NVFATBIN", std::string("/nonexistent/libnvfatbin.so"));
  NvrtcToolchain without(kiln::builder::NvrtcSearch::from_environment());
  CHECK_FALSE(without.nvfatbin().found);
  CHECK_FALSE(without.package_fatbin(result.images).has_value());
}

// --- choosing and validating images (no driver) ---------------------------------------------

TEST_CASE("images: which image a device runs, or why none") {
  struct Row {
    std::vector<DeviceImage> images;
    int major, minor;
    bool integrated;
    int driver, toolkit;
    int index;           // expected image index; -1 refused
    const char *arch;    // expected arch, or the refusal field
    const char *how;     // substring of how, or of the refusal note
  };
  const std::vector<Row> rows = {
      {{image_of("sm_90"), image_of("compute_90")}, 9, 0, false, 13000, 13000, 0, "sm_90", "exact SASS sm_90"},
      {{image_of("sm_80"), image_of("compute_80")}, 9, 0, false, 13000, 13000, 1, "compute_80", "PTX compute_80"},
      {{image_of("sm_87")}, 9, 0, false, 13000, 13000, -1, "cuda_arch", "no image runs on compute capability 9.0"},
      {{image_of("sm_80"), image_of("sm_90"), image_of("compute_80")}, 8, 6, false, 13000, 13000, 0, "sm_80", "same major, lower minor"},
      {{image_of("sm_80"), image_of("compute_80")}, 8, 7, true, 12060, 12060, 1, "compute_80", "JIT-compiled"},
      {{image_of("sm_87"), image_of("compute_87")}, 8, 7, true, 12060, 13000, 0, "sm_87", "exact SASS sm_87"},
      {{image_of("compute_90")}, 9, 0, false, 12060, 13000, -1, "driver_version", "222"},
      {{fatbin_of("sm_90,compute_90")}, 9, 0, false, 13000, 13000, 0, "sm_90", "from fatbin [sm_90,compute_90]"},
      {{fatbin_of("sm_80,compute_80"), image_of("sm_90")}, 9, 0, false, 13000, 13000, 1, "sm_90", "exact SASS sm_90"},
      {{fatbin_of("sm_90,compute_90"), image_of("sm_90")}, 9, 0, false, 13000, 13000, 1, "sm_90", "exact SASS sm_90"},
      {{fatbin_of("sm_80,compute_80"), image_of("sm_90")}, 8, 0, false, 13000, 13000, 0, "sm_80", "from fatbin"},
      {{}, 9, 0, false, 13000, 13000, -1, "cuda_arch", "no device image"},
  };
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Row &row = rows[r];
    CAPTURE(r);
    const auto device = make_device(row.major, row.minor, row.integrated, row.driver);
    const kiln::ImageChoice choice = kiln::choose_image(row.images, device, row.toolkit);
    CAPTURE(choice.how);
    if (row.index >= 0) {
      REQUIRE(choice.ok);
      CHECK(choice.index == static_cast<std::size_t>(row.index));
      REQUIRE(choice.arch.has_value());
      CHECK(choice.arch->to_string() == row.arch);
      CHECK(contains(choice.how, row.how));
      CHECK(choice.reasons.empty());
    } else {
      CHECK_FALSE(choice.ok);
      REQUIRE(choice.reasons.size() == 1);
      CAPTURE(choice.reasons[0].to_string());
      CHECK(choice.reasons[0].field == row.arch);
      CHECK(contains(choice.reasons[0].note, row.how));
    }
  }
  DeviceImage empty_fatbin;
  empty_fatbin.kind = "fatbin";
  CHECK_THROWS_AS(kiln::choose_image({empty_fatbin}, make_device(9, 0), 13000), kiln::UsageError);
}

TEST_CASE("images: bytes that are not what the label says are refused before any driver") {
  NvrtcToolchain &tc = toolchain();
  const JitResult result = tc.compile(saxpy_request("sm_90,compute_90"));
  const std::string cubin = result.images.at(0).bytes;
  const auto refused = [](const DeviceImage &image, const char *part) {
    kiln::ErrorKind kind = kiln::ErrorKind::other;
    const std::string what = error_of([&] { kiln::load::validate_image(image); }, &kind);
    CAPTURE(what);
    CHECK(kind == kiln::ErrorKind::integrity);
    CHECK(contains(what, part));
    CHECK(contains(what, image.describe()));
  };
  refused(image_of("sm_90", std::string(4096, 'G')), "no ELF magic");
  refused(image_of("sm_90", "\x7f" "ELF"), "shorter than an ELF header");
  refused(image_of("sm_90", cubin.substr(0, cubin.size() / 2)), "past the end");
  std::string host_elf = cubin;
  const std::uint16_t x86_64 = 62;
  std::memcpy(&host_elf[18], &x86_64, 2);
  refused(image_of("sm_90", host_elf), "not EM_CUDA");
  refused(image_of("sm_90", result.images.at(1).bytes), "no ELF magic");  // PTX labelled cubin
  refused(image_of("compute_90", "garbage that is no PTX"), ".version");
  refused(image_of("compute_90", std::string(".version 9.0\n.target sm_90\0x", 28)), "NUL");
  refused(image_of("compute_90", ""), "empty");
  DeviceImage fat = fatbin_of("sm_90,compute_90");
  fat.bytes = std::string(64, 'G');
  refused(fat, "no fatbin magic");
  fat.bytes = fake_fatbin(100, 50);
  refused(fat, "past the end");
  fat.bytes = fake_fatbin(50, 50);
  CHECK_NOTHROW(kiln::load::validate_image(fat));
  // Label contradictions and unknown kinds are usage errors.
  DeviceImage mixed = image_of("compute_90", cubin);
  mixed.kind = "cubin";
  CHECK_THROWS_AS(kiln::load::validate_image(mixed), kiln::UsageError);
  mixed.kind = "elf";
  CHECK_THROWS_AS(kiln::load::validate_image(mixed), kiln::UsageError);
  CHECK_NOTHROW(kiln::load::validate_image(image_of("sm_90", cubin)));
}

TEST_CASE("images: loading without a driver says why, before touching anything") {
  kiln::device::Driver driver("/nonexistent/libcuda.so.1");
  kiln::KernelImages set;
  set.label = "tests/saxpy";
  CHECK_THROWS_AS(kiln::load::load_kernels(driver, set, 0), kiln::UsageError);  // no image
  set.images = {image_of("sm_90")};
  set.kernels = {"saxpy"};
  kiln::ErrorKind kind = kiln::ErrorKind::usage;
  const std::string what = error_of([&] { kiln::load::load_kernels(driver, set, 0); }, &kind);
  CAPTURE(what);
  CHECK(kind == kiln::ErrorKind::other);
  CHECK(contains(what, "cannot load device images tests/saxpy"));
  CHECK(contains(what, "/nonexistent/libcuda.so.1"));
  CHECK_THROWS_AS(kiln::load::load_for_devices(driver, set, {}), kiln::Error);
  // The toolkit's link stub is not a driver either.
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  kiln::device::Driver stubbed(stub);
  if (stubbed.state() == kiln::DriverState::stub_library) {
    const std::string stub_what = error_of([&] { kiln::load::load_kernels(stubbed, set, 0); }, &kind);
    CAPTURE(stub_what);
    CHECK(kind == kiln::ErrorKind::other);
    CHECK(contains(stub_what, "stub"));
  }
}

// --- kiln.host.kernels/1 --------------------------------------------------------------------

using kiln::test::FakeHost;

TEST_CASE("host kernels: the C table resolves, maps errors to statuses, and truncates messages") {
  static int fake_function = 0;
  std::vector<kiln::load::KernelRequest> seen;
  kiln::load::HostKernelsService service([&](const kiln::load::KernelRequest &request) {
    seen.push_back(request);
    if (request.kernel == "k") return kiln::load::KernelAnswer{&fake_function, "sm_90 cubin: exact SASS sm_90"};
    if (request.kernel == "missing") throw kiln::NotFoundError("kernel \"missing\" is not in hjcd-ik/fk");
    if (request.kernel == "wrong") {
      throw kiln::IncompatibleError("hjcd-ik/fk on device 0", {{"cuda_arch", "sm_87", "sm_90", ""}});
    }
    if (request.kernel == "oom") throw std::bad_alloc();
    if (request.kernel == "null") return kiln::load::KernelAnswer{};
    throw std::runtime_error("resolver bug");
  });
  FakeHost fake;
  fake.service = &service;
  const auto *table = static_cast<const kiln_host_kernels_v1 *>(
      fake.host.get_service(&fake.host, KILN_HOST_KERNELS_SERVICE_ID));
  REQUIRE(table != nullptr);
  CHECK(table->struct_size >= KILN_HOST_KERNELS_V1_MIN_SIZE);
  CHECK(fake.host.get_service(&fake.host, "kiln.host.kernels/2") == nullptr);
  CHECK(fake.host.get_service(&fake.host, nullptr) == nullptr);

  void *function = reinterpret_cast<void *>(0x1);
  char message[256] = "";
  CHECK(table->get_kernel(&fake.host, "hjcd-ik", "fk", "k", 1, &function, message, sizeof message) == KILN_OK);
  CHECK(function == &fake_function);
  CHECK(std::string(message) == "sm_90 cubin: exact SASS sm_90");
  REQUIRE(seen.size() == 1);
  CHECK(seen[0].consumer == "hjcd-ik");
  CHECK(seen[0].name == "fk");
  CHECK(seen[0].device_ordinal == 1);

  const auto status_of = [&](const char *kernel, int32_t ordinal = 0) {
    function = reinterpret_cast<void *>(0x1);
    const kiln_status status =
        table->get_kernel(&fake.host, "hjcd-ik", "fk", kernel, ordinal, &function, message, sizeof message);
    CHECK(function == nullptr);
    return status;
  };
  CHECK(status_of("missing") == KILN_ERR_UNSUPPORTED);
  CHECK(contains(message, "is not in hjcd-ik/fk"));
  CHECK(status_of("wrong") == KILN_ERR_DEVICE);
  CHECK(contains(message, "cuda_arch: recorded sm_87, current sm_90"));
  CHECK(status_of("oom") == KILN_ERR_OUT_OF_MEMORY);
  CHECK(status_of("null") == KILN_ERR_INTERNAL);
  CHECK(status_of("other") == KILN_ERR_INTERNAL);
  CHECK(contains(message, "resolver bug"));
  CHECK(status_of("k", -1) == KILN_ERR_INVALID_ARGUMENT);
  CHECK(contains(message, "negative"));

  CHECK(table->get_kernel(&fake.host, nullptr, "fk", "k", 0, &function, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
  CHECK(contains(message, "consumer is NULL"));
  CHECK(table->get_kernel(&fake.host, "c", "fk", "k", 0, nullptr, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
  CHECK(table->get_kernel(nullptr, "c", "fk", "k", 0, &function, message, sizeof message) ==
        KILN_ERR_INVALID_ARGUMENT);
  // Truncation, and no buffer at all.
  char small[8];
  CHECK(table->get_kernel(&fake.host, "c", "fk", "missing", 0, &function, small, sizeof small) ==
        KILN_ERR_UNSUPPORTED);
  CHECK(std::strlen(small) == 7);
  CHECK(table->get_kernel(&fake.host, "c", "fk", "k", 0, &function, nullptr, 0) == KILN_OK);
}

// --- on a GPU -------------------------------------------------------------------------------

namespace {

using kiln::test::live_device;
using kiln::test::run_saxpy;

std::string sm(int cc) { return "sm_" + std::to_string(cc); }
std::string compute(int cc) { return "compute_" + std::to_string(cc); }

// An arch of another major than the device's, that NVRTC 13 still compiles for.
int other_major_cc(const kiln::DeviceIdentity &device) { return device.cc_major == 8 ? 75 : 80; }

}  // namespace

TEST_SUITE("gpu") {
  TEST_CASE("gpu jit: saxpy JIT-built for the device arch + PTX loads as exact SASS and computes") {
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    MESSAGE("device 0: " << device.name << " " << device.arch_name() << ", driver " << device.driver_version);
    const JitResult result = toolchain().compile(saxpy_request((sm(cc) + "," + compute(cc)).c_str()));
    const kiln::KernelImages set = result.kernel_images("tests/saxpy");
    const kiln::KernelLibrary library = kiln::load_kernels(set, 0);
    CHECK(library.device_ordinal() == 0);
    REQUIRE(library.choice().arch.has_value());
    CHECK(library.choice().arch->to_string() == sm(cc));
    CHECK(library.image().kind == "cubin");
    CHECK(contains(library.choice().how, "exact SASS " + sm(cc)));
    CHECK(library.kernel_names() == set.kernels);
    CHECK(library.kernel("saxpy") != nullptr);
    CHECK(library.function("saxpy") != nullptr);
    CHECK(library.function(set.kernels[1]) != nullptr);
    CHECK(library.handle() != nullptr);
    CHECK(library.context() != nullptr);
    CHECK_THROWS_AS(library.kernel("nope"), kiln::NotFoundError);
    MESSAGE("JIT " << result.total_ms << " ms, cuLibraryLoadData " << library.load_ms()
                   << " ms, resolve " << library.resolve_ms() << " ms");
    CHECK(run_saxpy(library) == 0);
    CHECK(run_saxpy(library, set.kernels[1]) == 0);
  }

  TEST_CASE("gpu jit: an image only for another arch is refused before use, naming the arch") {
    const auto device = live_device();
    const std::string other = device.cc_major == 8 && device.cc_minor == 7 ? "sm_90" : "sm_87";
    const JitResult result = toolchain().compile(saxpy_request(other.c_str()));
    try {
      kiln::load_kernels(result.kernel_images("tests/other"), 0);
      FAIL("expected an IncompatibleError");
    } catch (const kiln::IncompatibleError &error) {
      CAPTURE(error.what());
      REQUIRE(error.reasons().size() == 1);
      CHECK(error.reasons()[0].field == "cuda_arch");
      CHECK(error.reasons()[0].recorded == other);
      CHECK(error.reasons()[0].current == device.arch_name());
      CHECK(contains(error.what(), "tests/other"));
    }
  }

  TEST_CASE("gpu jit: SASS of another major + its PTX loads through the PTX and computes" *
            kiln::test::skip_if(kiln::test::no_ptx_jit)) {
    const auto device = live_device();
    const int base = other_major_cc(device);
    const JitResult result = toolchain().compile(saxpy_request((sm(base) + "," + compute(base)).c_str()));
    const kiln::KernelLibrary library = kiln::load_kernels(result.kernel_images("tests/ptx"), 0);
    REQUIRE(library.choice().arch.has_value());
    CHECK(library.choice().arch->to_string() == compute(base));
    CHECK(library.image().kind == "ptx");
    CHECK(contains(library.choice().how, "PTX " + compute(base)));
    CHECK(run_saxpy(library, result.kernels[1].lowered_name) == 0);
  }

  TEST_CASE("gpu jit: PTX newer than the driver is refused before the driver sees it" *
            kiln::test::skip_if(kiln::test::ptx_jit)) {
    const auto device = live_device();
    const int base = other_major_cc(device);
    const JitResult result = toolchain().compile(saxpy_request((sm(base) + "," + compute(base)).c_str()));
    CHECK_THROWS_AS(kiln::load_kernels(result.kernel_images("tests/ptx"), 0), kiln::IncompatibleError);
  }

  TEST_CASE("gpu jit: a mislabelled cubin is refused by the driver at kernel lookup, never a crash") {
    const auto device = live_device();
    const JitResult result = toolchain().compile(saxpy_request(sm(other_major_cc(device)).c_str()));
    kiln::KernelImages set = result.kernel_images("tests/mislabelled");
    set.images[0].arch = Arch::parse(device.arch_name());  // claims to be for this device
    kiln::ErrorKind kind = kiln::ErrorKind::usage;
    const std::string what = error_of([&] { kiln::load_kernels(set, 0); }, &kind);
    CAPTURE(what);
    CHECK((kind == kiln::ErrorKind::incompatible || kind == kiln::ErrorKind::integrity));
    CHECK(contains(what, "saxpy"));
    CHECK(contains(what, device.arch_name()));
    CHECK((contains(what, "(209)") || contains(what, "(200)")));
  }

  TEST_CASE("gpu jit: damaged PTX is refused by the driver with the kernel and the error" *
            kiln::test::skip_if(kiln::test::no_ptx_jit)) {
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    const JitResult result = toolchain().compile(saxpy_request(compute(cc).c_str()));
    kiln::KernelImages set = result.kernel_images("tests/damaged");
    std::string &ptx = set.images[0].bytes;
    ptx = ptx.substr(0, ptx.find(".address_size")) + ".address_size 64\n\n.visible .entry saxpy( garbage {{{\n";
    kiln::ErrorKind kind = kiln::ErrorKind::usage;
    const std::string what = error_of([&] { kiln::load_kernels(set, 0); }, &kind);
    CAPTURE(what);
    CHECK_FALSE(what.empty());
    CHECK(contains(what, compute(cc)));
    CHECK(contains(what, "saxpy"));
    CHECK((contains(what, "(218)") || contains(what, "(200)") || contains(what, "(209)")));
  }

  TEST_CASE("gpu jit: garbage labelled as the device's cubin is refused before the driver sees it") {
    const auto device = live_device();
    kiln::KernelImages set;
    set.images = {image_of(device.arch_name().c_str(), std::string(8192, '\x5a'))};
    set.kernels = {"saxpy"};
    kiln::ErrorKind kind = kiln::ErrorKind::usage;
    const std::string what = error_of([&] { kiln::load_kernels(set, 0); }, &kind);
    CAPTURE(what);
    CHECK(kind == kiln::ErrorKind::integrity);
    CHECK(contains(what, device.arch_name()));
    CHECK(contains(what, "no ELF magic"));
  }

  TEST_CASE("gpu jit: every visible device loads with its own choice; one ordinal; skipping") {
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    const int base = other_major_cc(device);
    const JitResult result = toolchain().compile(
        saxpy_request((sm(cc) + "," + sm(base) + "," + compute(base)).c_str()));
    const auto set = result.kernel_images("tests/all");
    const kiln::DeviceKernels all = kiln::load_for_devices(set);
    const int count = kiln::device::Driver::instance().device_count();
    CHECK(all.libraries.size() == static_cast<std::size_t>(count));
    CHECK(all.skipped.empty());
    for (const auto &library : all.libraries) {
      CAPTURE(library.device_ordinal());
      MESSAGE("device " << library.device_ordinal() << " (" << library.device().arch_name()
                        << "): " << library.image().describe() << ": " << library.choice().how);
      CHECK(library.choice().ok);
      CHECK(run_saxpy(library) == 0);
    }
    REQUIRE(all.on(0) != nullptr);
    CHECK(all.on(count) == nullptr);

    kiln::DeviceLoadOptions one;
    one.device_ordinal = 0;
    CHECK(kiln::load_for_devices(set, one).libraries.size() == 1);
    one.device_ordinal = count;
    CHECK_THROWS_AS(kiln::load_for_devices(set, one), kiln::UsageError);

    // Nothing fits anywhere: skipping still ends in an error naming every device.
    const std::string other = device.cc_major == 8 && device.cc_minor == 7 ? "sm_90" : "sm_87";
    kiln::DeviceLoadOptions skip;
    skip.skip_unusable = true;
    kiln::ErrorKind kind = kiln::ErrorKind::usage;
    const std::string what = error_of(
        [&] { kiln::load_for_devices(toolchain().compile(saxpy_request(other.c_str())).kernel_images(), skip); },
        &kind);
    CAPTURE(what);
    CHECK(kind == kiln::ErrorKind::incompatible);
    CHECK(contains(what, "no device can load"));
  }

  TEST_CASE("gpu jit: kernels not listed are enumerated from the image") {
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    const JitResult result = toolchain().compile(saxpy_request(sm(cc).c_str()));
    kiln::KernelImages set = result.kernel_images();
    set.kernels.clear();
    const kiln::KernelLibrary library = kiln::load_kernels(set, 0);
    const auto &names = library.kernel_names();
    MESSAGE("enumerated: " << names.size() << " kernels");
    CHECK(std::find(names.begin(), names.end(), "saxpy") != names.end());
    CHECK(run_saxpy(library) == 0);
  }

  TEST_CASE("gpu jit: a fatbin from nvFatbin loads and computes" * kiln::test::skip_if(kiln::test::no_nvfatbin)) {
    NvrtcToolchain &tc = toolchain();
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    const JitResult result = tc.compile(saxpy_request((sm(cc) + "," + compute(cc)).c_str()));
    const auto fatbin = tc.package_fatbin(result.images);
    REQUIRE(fatbin.has_value());
    kiln::KernelImages set = result.kernel_images("tests/fatbin");
    set.images = {*fatbin};
    const kiln::KernelLibrary library = kiln::load_kernels(set, 0);
    CHECK(library.image().kind == "fatbin");
    CHECK(contains(library.choice().how, "from fatbin"));
    CHECK(run_saxpy(library, result.kernels[1].lowered_name) == 0);
  }

  TEST_CASE("gpu jit: kiln.host.kernels/1 hands a plugin the loaded function") {
    const auto device = live_device();
    const int cc = device.cc_major * 10 + device.cc_minor;
    const JitResult result = toolchain().compile(saxpy_request((sm(cc) + "," + compute(cc)).c_str()));
    std::vector<kiln::KernelLibrary> loaded;  // kept for the service's lifetime
    kiln::load::HostKernelsService service([&](const kiln::load::KernelRequest &request) {
      loaded.push_back(kiln::load_kernels(result.kernel_images(request.consumer + "/" + request.name),
                                          request.device_ordinal));
      const auto &library = loaded.back();
      return kiln::load::KernelAnswer{library.function(request.kernel),
                                      library.image().describe() + ": " + library.choice().how};
    });
    FakeHost fake;
    fake.service = &service;
    const auto *table = static_cast<const kiln_host_kernels_v1 *>(
        fake.host.get_service(&fake.host, KILN_HOST_KERNELS_SERVICE_ID));
    REQUIRE(table != nullptr);
    void *function = nullptr;
    char message[512] = "";
    REQUIRE_MESSAGE(table->get_kernel(&fake.host, "tests", "saxpy", "saxpy", 0, &function, message,
                                      sizeof message) == KILN_OK,
                    message);
    CHECK(function == loaded.at(0).function("saxpy"));
    CHECK(contains(message, "exact SASS"));
    CHECK(table->get_kernel(&fake.host, "tests", "saxpy", "nope", 0, &function, message, sizeof message) ==
          KILN_ERR_UNSUPPORTED);
    CHECK(contains(message, "nope"));
  }
}
