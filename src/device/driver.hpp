// kiln internal: the CUDA Driver API, opened at run time.
//
// libcuda is dlopen'ed, never linked, so kiln runs (plans, builds, checks against a declared
// device) where no driver exists. Every entry point except cuGetProcAddress_v2 is taken through
// cuGetProcAddress_v2 by base name, so the driver hands out the ABI variant (_v2, ...) that
// matches the cuda.h kiln was compiled against instead of whatever a plain dlsym finds.
#pragma once

#include <cuda.h>

#include <mutex>
#include <string>
#include <map>

#include <kiln/identity.hpp>

namespace kiln::device {

class Driver {
 public:
  // Entry-point types come from the declarations in cuda.h (decltype is unevaluated, so
  // nothing is linked); the cuda.h macros already map e.g. cuDeviceTotalMem to its _v2.
  struct Api {
    decltype(&::cuInit) init = nullptr;
    decltype(&::cuDriverGetVersion) driver_get_version = nullptr;
    decltype(&::cuDeviceGetCount) device_get_count = nullptr;
    decltype(&::cuDeviceGet) device_get = nullptr;
    decltype(&::cuDeviceGetName) device_get_name = nullptr;
    decltype(&::cuDeviceGetUuid) device_get_uuid = nullptr;
    decltype(&::cuDeviceGetAttribute) device_get_attribute = nullptr;
    decltype(&::cuDeviceTotalMem) device_total_mem = nullptr;
    decltype(&::cuDeviceGetPCIBusId) device_get_pci_bus_id = nullptr;
    decltype(&::cuGetErrorName) get_error_name = nullptr;
    decltype(&::cuGetErrorString) get_error_string = nullptr;
  };

  // The default library: $KILN_LIBCUDA when set and non-empty, else "libcuda.so.1".
  static std::string default_path();

  // The process-wide driver, opened and cuInit'ed on the first call only (cuInit costs
  // 100-235 ms). Thread-safe. Never throws on a missing or broken driver: see state().
  static Driver &instance();

  // A private instance (tests point it at a stub or a missing file). Opens `path`, resolves
  // the entry points, runs cuInit and counts devices. Never throws on driver failures.
  explicit Driver(const std::string &path);
  ~Driver();
  Driver(const Driver &) = delete;
  Driver &operator=(const Driver &) = delete;

  DriverState state() const noexcept { return state_; }
  bool ok() const noexcept { return state_ == DriverState::ok; }
  // Why the state is what it is: which library, which call, which error, what to do.
  const std::string &detail() const noexcept { return detail_; }
  const std::string &library() const noexcept { return library_; }
  int driver_version() const noexcept { return driver_version_; }  // 0 when unknown
  int device_count() const noexcept { return device_count_; }
  // The cudaVersion passed to cuGetProcAddress: CUDA_VERSION of our cuda.h, lowered to the
  // driver's version when the driver is older (it answers CUDA_ERROR_INVALID_VALUE otherwise).
  int lookup_version() const noexcept { return lookup_version_; }

  // The typed entry points; all non-null when state() is ok or no_device.
  const Api &api() const noexcept { return api_; }

  // Any driver entry point by base name ("cuLibraryLoadData"), looked up once and cached.
  // nullptr when the driver is not loaded or does not offer the symbol. Thread-safe.
  void *proc(const char *name);
  template <class Fn>
  Fn proc_as(const char *name) {
    return reinterpret_cast<Fn>(proc(name));
  }

  // An entry point as cuGetProcAddress gives it for cuda_version (the CUDA_VERSION a caller's
  // cuda.h declares; lowered to the driver's version when the driver is older, as kiln's own
  // lookups are), or nullptr with *why set. Not cached. Thread-safe.
  void *proc_for(const char *name, int cuda_version, std::string *why) const;

  // "CUDA_ERROR_NOT_FOUND (500): named symbol not found". Uses the driver when it can,
  // a built-in table otherwise (no driver, stub library).
  std::string error_text(CUresult result) const;
  // The built-in table alone.
  static std::string builtin_error_text(CUresult result);

 private:
  using GetProcAddress = CUresult (*)(const char *, void **, int, cuuint64_t,
                                      CUdriverProcAddressQueryResult *);
  CUresult lookup(const char *name, int cuda_version, void **out, std::string *why) const;
  void open();
  void fail(DriverState state, std::string detail);

  std::string library_;
  void *handle_ = nullptr;
  GetProcAddress get_proc_address_ = nullptr;
  DriverState state_ = DriverState::no_driver;
  std::string detail_;
  int driver_version_ = 0;
  int device_count_ = 0;
  int lookup_version_ = CUDA_VERSION;
  bool initialised_ = false;  // cuInit succeeded: the library must stay mapped
  Api api_;

  std::mutex proc_mutex_;
  // Ordered, with transparent lookup: a warm proc() finds its name without building a string.
  std::map<std::string, void *, std::less<>> proc_cache_;
};

// "13.0" from 13000.
std::string driver_version_text(int version);
// A driver detail without its closing advice to declare a device (KILN_DEVICE): for reports
// where one is declared already.
std::string without_declare_hint(const std::string &detail);

}  // namespace kiln::device
