// kiln internal: the CUDA Driver API, opened at run time (see driver.hpp).
#include "device/driver.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <type_traits>
#include <cstdlib>
#include <utility>

namespace kiln::device {
namespace {

// Names and meanings of every CUresult in cuda.h 13.0, for when the driver cannot tell us
// (no driver, or the toolkit's stub, which answers cuGetErrorName with 34 as well). Numbers
// rather than enumerators so an older cuda.h still compiles this table.
struct ErrorEntry {
  int code;
  const char *name;
  const char *text;  // nullptr: name only
};
constexpr ErrorEntry kErrors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {5, "CUDA_ERROR_PROFILER_DISABLED", nullptr},
    {6, "CUDA_ERROR_PROFILER_NOT_INITIALIZED", nullptr},
    {7, "CUDA_ERROR_PROFILER_ALREADY_STARTED", nullptr},
    {8, "CUDA_ERROR_PROFILER_ALREADY_STOPPED", nullptr},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {36, "CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER", "CUDA driver is too old for this call"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {102, "CUDA_ERROR_DEVICE_NOT_LICENSED", nullptr},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {202, "CUDA_ERROR_CONTEXT_ALREADY_CURRENT", nullptr},
    {205, "CUDA_ERROR_MAP_FAILED", nullptr},
    {206, "CUDA_ERROR_UNMAP_FAILED", nullptr},
    {207, "CUDA_ERROR_ARRAY_IS_MAPPED", nullptr},
    {208, "CUDA_ERROR_ALREADY_MAPPED", nullptr},
    {209, "CUDA_ERROR_NO_BINARY_FOR_GPU", "no kernel image is available for execution on the device"},
    {210, "CUDA_ERROR_ALREADY_ACQUIRED", nullptr},
    {211, "CUDA_ERROR_NOT_MAPPED", nullptr},
    {212, "CUDA_ERROR_NOT_MAPPED_AS_ARRAY", nullptr},
    {213, "CUDA_ERROR_NOT_MAPPED_AS_POINTER", nullptr},
    {214, "CUDA_ERROR_ECC_UNCORRECTABLE", nullptr},
    {215, "CUDA_ERROR_UNSUPPORTED_LIMIT", nullptr},
    {216, "CUDA_ERROR_CONTEXT_ALREADY_IN_USE", nullptr},
    {217, "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED", nullptr},
    {218, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {219, "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT", nullptr},
    {220, "CUDA_ERROR_NVLINK_UNCORRECTABLE", nullptr},
    {221, "CUDA_ERROR_JIT_COMPILER_NOT_FOUND", "PTX JIT compiler library not found"},
    {222, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION", "the provided PTX was compiled with an unsupported toolchain"},
    {223, "CUDA_ERROR_JIT_COMPILATION_DISABLED", "PTX JIT compilation was disabled"},
    {224, "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY", nullptr},
    {225, "CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC", nullptr},
    {226, "CUDA_ERROR_CONTAINED", nullptr},
    {300, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {301, "CUDA_ERROR_FILE_NOT_FOUND", "file not found"},
    {302, "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND", "shared object symbol not found"},
    {303, "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED", "shared object initialization failed"},
    {304, "CUDA_ERROR_OPERATING_SYSTEM", "OS call failed or operation not supported on this OS"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {401, "CUDA_ERROR_ILLEGAL_STATE", nullptr},
    {402, "CUDA_ERROR_LOSSY_QUERY", nullptr},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {703, "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING", nullptr},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", nullptr},
    {705, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", nullptr},
    {708, "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE", nullptr},
    {709, "CUDA_ERROR_CONTEXT_IS_DESTROYED", nullptr},
    {710, "CUDA_ERROR_ASSERT", nullptr},
    {711, "CUDA_ERROR_TOO_MANY_PEERS", nullptr},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", nullptr},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", nullptr},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", nullptr},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", nullptr},
    {718, "CUDA_ERROR_INVALID_PC", nullptr},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {720, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", nullptr},
    {721, "CUDA_ERROR_TENSOR_MEMORY_LEAK", nullptr},
    {800, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {802, "CUDA_ERROR_SYSTEM_NOT_READY", "system not yet initialized"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {804, "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE", "forward compatibility was attempted on non supported HW"},
    {805, "CUDA_ERROR_MPS_CONNECTION_FAILED", nullptr},
    {806, "CUDA_ERROR_MPS_RPC_FAILURE", nullptr},
    {807, "CUDA_ERROR_MPS_SERVER_NOT_READY", nullptr},
    {808, "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED", nullptr},
    {809, "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED", nullptr},
    {810, "CUDA_ERROR_MPS_CLIENT_TERMINATED", nullptr},
    {811, "CUDA_ERROR_CDP_NOT_SUPPORTED", nullptr},
    {812, "CUDA_ERROR_CDP_VERSION_MISMATCH", nullptr},
    {900, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", nullptr},
    {901, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED", nullptr},
    {902, "CUDA_ERROR_STREAM_CAPTURE_MERGE", nullptr},
    {903, "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED", nullptr},
    {904, "CUDA_ERROR_STREAM_CAPTURE_UNJOINED", nullptr},
    {905, "CUDA_ERROR_STREAM_CAPTURE_ISOLATION", nullptr},
    {906, "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT", nullptr},
    {907, "CUDA_ERROR_CAPTURED_EVENT", nullptr},
    {908, "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD", nullptr},
    {909, "CUDA_ERROR_TIMEOUT", nullptr},
    {910, "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE", nullptr},
    {911, "CUDA_ERROR_EXTERNAL_DEVICE", nullptr},
    {912, "CUDA_ERROR_INVALID_CLUSTER_SIZE", nullptr},
    {913, "CUDA_ERROR_FUNCTION_NOT_LOADED", "function not loaded"},
    {914, "CUDA_ERROR_INVALID_RESOURCE_TYPE", nullptr},
    {915, "CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION", nullptr},
    {916, "CUDA_ERROR_KEY_ROTATION", nullptr},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorEntry *find_error(int code) {
  for (const auto &entry : kErrors) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

constexpr const char *kDeclareHint =
    "set KILN_DEVICE=sm_87 (your target's arch) to declare a device for planning and building";

// Entry points of the driver beyond its first call are all requested with this version or a
// newer one; cuGetProcAddress_v2 itself exists only from CUDA 12.0 on.
constexpr int kMinimumDriver = 12000;

}  // namespace

std::string driver_version_text(int version) {
  if (version <= 0) return "unknown";
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

std::string without_declare_hint(const std::string &detail) {
  const std::string suffix = std::string(", or ") + kDeclareHint;
  if (detail.size() >= suffix.size() && detail.compare(detail.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return detail.substr(0, detail.size() - suffix.size());
  }
  return detail;
}

std::string Driver::default_path() {
  const char *env = ::secure_getenv("KILN_LIBCUDA");
  if (env != nullptr && *env != '\0') return env;
  return "libcuda.so.1";
}

Driver &Driver::instance() {
  static std::once_flag once;
  // Never destroyed: libcuda stays mapped for the life of the process (its threads and
  // atexit handlers run driver code), and objects with static lifetime may still call into it
  // from their destructors.
  static Driver *driver = nullptr;
  std::call_once(once, [] { driver = new Driver(default_path()); });
  return *driver;
}

Driver::Driver(const std::string &path) : library_(path) { open(); }

Driver::~Driver() {
  // Unload only a library that never initialised: after cuInit the driver has threads and
  // handlers of its own that must not lose their code.
  if (handle_ != nullptr && !initialised_) dlclose(handle_);
}

void Driver::fail(DriverState state, std::string detail) {
  state_ = state;
  detail_ = std::move(detail);
}

CUresult Driver::lookup(const char *name, int cuda_version, void **out, std::string *why) const {
  *out = nullptr;
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  // Legacy default stream: what code compiled without --default-stream per-thread expects.
  const CUresult result = get_proc_address_(name, out, cuda_version,
                                            CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status);
  if (result == CUDA_SUCCESS && *out == nullptr && why != nullptr) {
    *why = status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
               ? "it needs a newer CUDA version than " + driver_version_text(cuda_version)
               : std::string("the driver does not offer it");
  }
  return result;
}

void Driver::open() {
  const char *env = ::secure_getenv("KILN_LIBCUDA");
  const bool from_env = env != nullptr && library_ == env;
  dlerror();
  handle_ = dlopen(library_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char *err = dlerror();
    const std::string why = err != nullptr ? err : "unknown dlopen error";
    if (library_ == "libcuda.so.1") {
      fail(DriverState::no_driver,
           "libcuda.so.1 not found: no NVIDIA driver on this machine (dlopen: " + why +
               "); install the NVIDIA driver, or " + kDeclareHint);
    } else {
      fail(DriverState::no_driver,
           "cannot open the CUDA driver library " + library_ +
               (from_env ? " (from KILN_LIBCUDA)" : "") + " (dlopen: " + why +
               "); point KILN_LIBCUDA at the driver's libcuda.so.1 or unset it, or " + kDeclareHint);
    }
    return;
  }

  void *entry = dlsym(handle_, "cuGetProcAddress_v2");
  if (entry == nullptr) {
    fail(DriverState::init_failed,
         library_ + " has no cuGetProcAddress_v2: it is not a CUDA driver, or a driver older "
                    "than CUDA 12.0; install an NVIDIA driver for CUDA 12.0 or newer, or " +
             kDeclareHint);
    return;
  }
  get_proc_address_ = reinterpret_cast<GetProcAddress>(entry);

  const auto call_failed = [this](const std::string &call, CUresult result) {
    if (result == CUDA_ERROR_STUB_LIBRARY) {
      fail(DriverState::stub_library,
           library_ + " is the CUDA toolkit's link stub, not a driver: " + call + " returned " +
               error_text(result) +
               "; point KILN_LIBCUDA at the real driver's libcuda.so.1 or unset it (and keep "
               "lib64/stubs out of LD_LIBRARY_PATH), or " + kDeclareHint);
    } else if (result == CUDA_ERROR_NO_DEVICE) {
      fail(DriverState::no_device,
           "CUDA driver " + driver_version_text(driver_version_) + " (" + library_ +
               ") sees no device: " + call + " returned " + error_text(result) +
               "; check CUDA_VISIBLE_DEVICES and nvidia-smi, or " + kDeclareHint);
    } else {
      fail(DriverState::init_failed,
           call + " failed in " + library_ + " (driver " + driver_version_text(driver_version_) +
               "): " + error_text(result) +
               "; check that the NVIDIA kernel module is loaded and matches this driver "
               "(nvidia-smi) and that /dev/nvidia* is accessible, or " + kDeclareHint);
    }
  };
  // Resolves one entry point into its typed slot; false (state set) when it cannot.
  const auto resolve = [this, &call_failed](const char *name, int version, auto &slot) {
    void *pointer = nullptr;
    std::string why;
    const CUresult result = lookup(name, version, &pointer, &why);
    if (result != CUDA_SUCCESS) {
      call_failed(std::string("cuGetProcAddress_v2(\"") + name + "\")", result);
      return false;
    }
    if (pointer == nullptr) {
      fail(DriverState::init_failed,
           "CUDA driver " + driver_version_text(driver_version_) + " (" + library_ +
               ") offers no " + name + ": " + why + "; update the NVIDIA driver");
      return false;
    }
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(pointer);
    return true;
  };

  // The driver's version first: cuGetProcAddress answers CUDA_ERROR_INVALID_VALUE when asked
  // for a version above the driver's own, so an older driver is asked for its own version.
  if (!resolve("cuDriverGetVersion", kMinimumDriver, api_.driver_get_version)) return;
  int version = 0;
  const CUresult version_result = api_.driver_get_version(&version);
  if (version_result != CUDA_SUCCESS) {
    call_failed("cuDriverGetVersion", version_result);
    return;
  }
  driver_version_ = version;
  lookup_version_ = std::min(CUDA_VERSION, std::max(version, kMinimumDriver));

  // Error names first, so that any later failure is reported in the driver's own words.
  if (!resolve("cuGetErrorName", lookup_version_, api_.get_error_name) ||
      !resolve("cuGetErrorString", lookup_version_, api_.get_error_string) ||
      !resolve("cuInit", lookup_version_, api_.init) ||
      !resolve("cuDeviceGetCount", lookup_version_, api_.device_get_count) ||
      !resolve("cuDeviceGet", lookup_version_, api_.device_get) ||
      !resolve("cuDeviceGetName", lookup_version_, api_.device_get_name) ||
      !resolve("cuDeviceGetUuid", lookup_version_, api_.device_get_uuid) ||
      !resolve("cuDeviceGetAttribute", lookup_version_, api_.device_get_attribute) ||
      !resolve("cuDeviceTotalMem", lookup_version_, api_.device_total_mem) ||
      !resolve("cuDeviceGetPCIBusId", lookup_version_, api_.device_get_pci_bus_id)) {
    return;
  }

  const CUresult init_result = api_.init(0);
  if (init_result != CUDA_SUCCESS) {
    call_failed("cuInit", init_result);
    return;
  }
  initialised_ = true;

  int count = 0;
  const CUresult count_result = api_.device_get_count(&count);
  if (count_result != CUDA_SUCCESS) {
    call_failed("cuDeviceGetCount", count_result);
    return;
  }
  device_count_ = count;
  if (count == 0) {
    fail(DriverState::no_device,
         "CUDA driver " + driver_version_text(driver_version_) + " (" + library_ +
             ") reports 0 devices; check CUDA_VISIBLE_DEVICES and nvidia-smi, or " + kDeclareHint);
    return;
  }
  fail(DriverState::ok, "CUDA driver " + driver_version_text(driver_version_) + " (" + library_ +
                            "), " + std::to_string(count) + (count == 1 ? " device" : " devices"));
}

void *Driver::proc(const char *name) {
  if (get_proc_address_ == nullptr || name == nullptr || state_ == DriverState::stub_library) {
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(proc_mutex_);
  const auto found = proc_cache_.find(std::string_view(name));
  if (found != proc_cache_.end()) return found->second;
  void *pointer = nullptr;
  if (lookup(name, lookup_version_, &pointer, nullptr) != CUDA_SUCCESS) pointer = nullptr;
  proc_cache_.emplace(name, pointer);
  return pointer;
}

void *Driver::proc_for(const char *name, int cuda_version, std::string *why) const {
  if (get_proc_address_ == nullptr || name == nullptr || state_ == DriverState::stub_library) {
    if (why != nullptr) *why = name == nullptr ? std::string("no symbol name") : detail_;
    return nullptr;
  }
  const int version = driver_version_ > 0 && driver_version_ < cuda_version ? driver_version_ : cuda_version;
  void *pointer = nullptr;
  std::string reason;
  const CUresult result = lookup(name, version, &pointer, &reason);
  if (result != CUDA_SUCCESS) {
    pointer = nullptr;
    reason = error_text(result);
  }
  if (pointer == nullptr && why != nullptr) {
    *why = "cuGetProcAddress(" + std::string(name) + ", " + std::to_string(version) + "): " +
           (reason.empty() ? std::string("the driver does not offer it") : reason);
  }
  return pointer;
}

std::string Driver::error_text(CUresult result) const {
  const char *name = nullptr;
  if (api_.get_error_name != nullptr && api_.get_error_name(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    std::string text = std::string(name) + " (" + std::to_string(static_cast<int>(result)) + ")";
    const char *meaning = nullptr;
    if (api_.get_error_string != nullptr &&
        api_.get_error_string(result, &meaning) == CUDA_SUCCESS && meaning != nullptr) {
      text += std::string(": ") + meaning;
    }
    return text;
  }
  return builtin_error_text(result);
}

std::string Driver::builtin_error_text(CUresult result) {
  const int code = static_cast<int>(result);
  const ErrorEntry *entry = find_error(code);
  if (entry == nullptr) return "CUDA error " + std::to_string(code);
  std::string text = std::string(entry->name) + " (" + std::to_string(code) + ")";
  if (entry->text != nullptr) text += std::string(": ") + entry->text;
  return text;
}

}  // namespace kiln::device
