// kiln internal: the host side of "kiln.host.kernels/1" (abi/kiln/ext/host_kernels.h).
//
// A skeleton the loader wires in: it owns the C table, turns C arguments into C++ ones, calls
// a resolver the loader supplies (which does resolve -> check -> load_kernels, caching loaded
// KernelLibrary objects for as long as the plugin lives), and turns its answer or its
// kiln::Error back into a kiln_status and a message. No exception crosses into the plugin.
//
// Wiring (the loader's get_service callback):
//   const void *host_get_service(const kiln_host_services *host, const char *id) {
//     const auto *library = static_cast<const Instance::Library *>(host->host_data);
//     if (const void *table = library->kernels_service->get_service(id)) return table;
//     return nullptr;
//   }
// The C entry point finds its service from the table pointer get_service returns (the table
// is the first member of a block that also points back to the service), so it needs nothing
// from host_data.
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <kiln/ext/host_kernels.h>
#include <kiln/kernels.hpp>

namespace kiln::load {

// Loads device-image artifact consumer/name on a device (resolve -> check -> verify -> load ->
// resolve kernels); throws kiln::Error. What a loaded plugin's kernel service draws from.
using KernelSource = std::function<KernelLibrary(const std::string &consumer, const std::string &name, int device)>;

struct KernelRequest {
  std::string consumer;
  std::string name;
  std::string kernel;
  int device_ordinal = 0;
};

struct KernelAnswer {
  void *function = nullptr;  // the CUfunction, owned by whoever the resolver keeps it in
  std::string how;           // "sm_90 cubin: exact SASS sm_90" (goes to the message on success)
  void *context = nullptr;   // the CUcontext the function belongs to (launch makes it current)
};

// A driver entry point for a CUDA version, or nullptr with *why set (device::Driver::proc_for).
using DriverProcs = std::function<void *(const char *symbol, int cuda_version, std::string *why)>;

// Resolves one request; throws kiln::Error (or anything) on failure. Must keep the library the
// function came from loaded until the service is destroyed.
using KernelResolver = std::function<KernelAnswer(const KernelRequest &)>;

class HostKernelsService {
 public:
  // procs: where launch and get_driver_proc find the driver; empty: the process-wide driver
  // (device::Driver::instance(), opened on first use, never at construction).
  explicit HostKernelsService(KernelResolver resolver, DriverProcs procs = {});
  HostKernelsService(const HostKernelsService &) = delete;
  HostKernelsService &operator=(const HostKernelsService &) = delete;

  // The table for KILN_HOST_KERNELS_SERVICE_ID, nullptr for any other id. [any-thread]
  const void *get_service(const char *service_id) const noexcept;
  const kiln_host_kernels_v1 *table() const noexcept { return &block_.table; }

  // The C entry points (public for tests): each finds the service through host->get_service.
  static kiln_status get_kernel(const kiln_host_services *host, const char *consumer,
                                const char *name, const char *kernel_name, int32_t device_ordinal,
                                void **cu_function_out, char *message, size_t message_size);
  static kiln_status launch(const kiln_host_services *host, int32_t device_ordinal, void *cu_function,
                            const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                            void *cu_stream, void **kernel_params, char *message, size_t message_size);
  static kiln_status get_driver_proc(const kiln_host_services *host, const char *symbol, int32_t cuda_version,
                                     void **proc_out, char *message, size_t message_size);

  // Devices launch can serve (ordinals 0 .. kMaxDevices-1).
  static constexpr int kMaxDevices = 64;

 private:
  struct Block {
    kiln_host_kernels_v1 table;  // first: get_service hands out &block_.table
    const HostKernelsService *self;
  };
  static const HostKernelsService *service_of(const kiln_host_services *host);
  void *driver_proc(const char *symbol, int cuda_version, std::string *why) const;
  static kiln_status get_kernel_checked(const kiln_host_services *host, const char *consumer,
                                        const char *name, const char *kernel_name,
                                        int32_t device_ordinal, void **cu_function_out,
                                        char *message, size_t message_size);
  kiln_status call(const KernelRequest &request, void **out, char *message, size_t size) const;

  Block block_{};
  KernelResolver resolver_;
  DriverProcs procs_;
  mutable std::mutex mutex_;  // one load at a time, whatever thread or plugin asks
  // Set once get_kernel succeeded (for launch, which takes no lock): each device's context and
  // the three driver calls launch makes.
  mutable std::array<std::atomic<void *>, kMaxDevices> contexts_{};
  mutable std::atomic<void *> ctx_get_current_{nullptr}, ctx_set_current_{nullptr}, launch_kernel_{nullptr};
};

// Writes text into a caller's (message, size) buffer: NUL-terminated, truncated if it must.
void write_message(char *message, size_t message_size, std::string_view text) noexcept;

}  // namespace kiln::load
