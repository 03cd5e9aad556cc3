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

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include <kiln/ext/host_kernels.h>

namespace kiln::load {

struct KernelRequest {
  std::string consumer;
  std::string name;
  std::string kernel;
  int device_ordinal = 0;
};

struct KernelAnswer {
  void *function = nullptr;  // the CUfunction, owned by whoever the resolver keeps it in
  std::string how;           // "sm_90 cubin: exact SASS sm_90" (goes to the message on success)
};

// Resolves one request; throws kiln::Error (or anything) on failure. Must keep the library the
// function came from loaded until the service is destroyed.
using KernelResolver = std::function<KernelAnswer(const KernelRequest &)>;

class HostKernelsService {
 public:
  explicit HostKernelsService(KernelResolver resolver);
  HostKernelsService(const HostKernelsService &) = delete;
  HostKernelsService &operator=(const HostKernelsService &) = delete;

  // The table for KILN_HOST_KERNELS_SERVICE_ID, nullptr for any other id. [any-thread]
  const void *get_service(const char *service_id) const noexcept;
  const kiln_host_kernels_v1 *table() const noexcept { return &block_.table; }

  // The C entry point (public for tests): finds the service through host->get_service.
  static kiln_status get_kernel(const kiln_host_services *host, const char *consumer,
                                const char *name, const char *kernel_name, int32_t device_ordinal,
                                void **cu_function_out, char *message, size_t message_size);

 private:
  struct Block {
    kiln_host_kernels_v1 table;  // first: get_service hands out &block_.table
    const HostKernelsService *self;
  };
  static kiln_status get_kernel_checked(const kiln_host_services *host, const char *consumer,
                                        const char *name, const char *kernel_name,
                                        int32_t device_ordinal, void **cu_function_out,
                                        char *message, size_t message_size);
  kiln_status call(const KernelRequest &request, void **out, char *message, size_t size) const;

  Block block_{};
  KernelResolver resolver_;
  mutable std::mutex mutex_;  // one load at a time, whatever thread or plugin asks
};

// Writes text into a caller's (message, size) buffer: NUL-terminated, truncated if it must.
void write_message(char *message, size_t message_size, std::string_view text) noexcept;

}  // namespace kiln::load
