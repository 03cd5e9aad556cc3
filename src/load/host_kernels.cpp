// kiln internal: the host side of "kiln.host.kernels/1" (see host_kernels.hpp).
#include "load/host_kernels.hpp"

#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <kiln/errors.hpp>

namespace kiln::load {

void write_message(char *message, size_t message_size, std::string_view text) noexcept {
  if (message == nullptr || message_size == 0) return;
  const size_t length = text.size() < message_size - 1 ? text.size() : message_size - 1;
  std::memcpy(message, text.data(), length);
  message[length] = '\0';
}

HostKernelsService::HostKernelsService(KernelResolver resolver) : resolver_(std::move(resolver)) {
  block_.table.struct_size = sizeof(kiln_host_kernels_v1);
  block_.table.get_kernel = &HostKernelsService::get_kernel;
  block_.self = this;
}

const void *HostKernelsService::get_service(const char *service_id) const noexcept {
  if (service_id == nullptr || std::strcmp(service_id, KILN_HOST_KERNELS_SERVICE_ID) != 0) {
    return nullptr;
  }
  return &block_.table;
}

kiln_status HostKernelsService::get_kernel(const kiln_host_services *host, const char *consumer,
                                           const char *name, const char *kernel_name,
                                           int32_t device_ordinal, void **cu_function_out,
                                           char *message, size_t message_size) {
  if (cu_function_out != nullptr) *cu_function_out = nullptr;
  // Nothing may unwind into the plugin: building a message can itself run out of memory.
  try {
    return get_kernel_checked(host, consumer, name, kernel_name, device_ordinal, cu_function_out,
                              message, message_size);
  } catch (...) {
    write_message(message, message_size, "kiln.host.kernels/1 get_kernel: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  }
}

kiln_status HostKernelsService::get_kernel_checked(const kiln_host_services *host,
                                                   const char *consumer, const char *name,
                                                   const char *kernel_name, int32_t device_ordinal,
                                                   void **cu_function_out, char *message,
                                                   size_t message_size) {
  write_message(message, message_size, "");
  if (host == nullptr || consumer == nullptr || name == nullptr || kernel_name == nullptr ||
      cu_function_out == nullptr) {
    write_message(message, message_size,
                  std::string("kiln.host.kernels/1 get_kernel: ") +
                      (host == nullptr             ? "host"
                       : consumer == nullptr       ? "consumer"
                       : name == nullptr           ? "name"
                       : kernel_name == nullptr    ? "kernel_name"
                                                   : "cu_function_out") +
                      " is NULL");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  if (device_ordinal < 0) {
    write_message(message, message_size,
                  "kiln.host.kernels/1 get_kernel: device ordinal " + std::to_string(device_ordinal) +
                      " is negative");
    return KILN_ERR_INVALID_ARGUMENT;
  }
  // The table the plugin called through is the one get_service hands out: its block leads
  // back to the service.
  const void *table = host->get_service != nullptr
                          ? host->get_service(host, KILN_HOST_KERNELS_SERVICE_ID)
                          : nullptr;
  if (table == nullptr) {
    write_message(message, message_size,
                  "kiln.host.kernels/1 get_kernel: this host does not offer the service");
    return KILN_ERR_INTERNAL;
  }
  const auto *block = reinterpret_cast<const Block *>(table);
  KernelRequest request{consumer, name, kernel_name, static_cast<int>(device_ordinal)};
  return block->self->call(request, cu_function_out, message, message_size);
}

kiln_status HostKernelsService::call(const KernelRequest &request, void **out, char *message,
                                     size_t size) const {
  try {
    KernelAnswer answer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      answer = resolver_(request);
    }
    if (answer.function == nullptr) {
      write_message(message, size,
                    "kernel \"" + request.kernel + "\" of " + request.consumer + "/" + request.name +
                        ": the host's resolver returned no function");
      return KILN_ERR_INTERNAL;
    }
    *out = answer.function;
    write_message(message, size, answer.how);
    return KILN_OK;
  } catch (const Error &error) {
    write_message(message, size, error.what());
    const std::string_view what = error.what();
    if (what.find("CUDA_ERROR_OUT_OF_MEMORY") != std::string_view::npos) return KILN_ERR_OUT_OF_MEMORY;
    switch (error.kind()) {
      case ErrorKind::usage: return KILN_ERR_INVALID_ARGUMENT;
      case ErrorKind::not_found: return KILN_ERR_UNSUPPORTED;
      case ErrorKind::incompatible:
      case ErrorKind::integrity:
      case ErrorKind::build:
      case ErrorKind::other: return KILN_ERR_DEVICE;
      case ErrorKind::abi: return KILN_ERR_UNSUPPORTED;
    }
    return KILN_ERR_INTERNAL;
  } catch (const std::bad_alloc &) {
    write_message(message, size, "kiln.host.kernels/1 get_kernel: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &error) {
    write_message(message, size, std::string("kiln.host.kernels/1 get_kernel: ") + error.what());
    return KILN_ERR_INTERNAL;
  } catch (...) {
    write_message(message, size, "kiln.host.kernels/1 get_kernel: unknown exception");
    return KILN_ERR_INTERNAL;
  }
}

}  // namespace kiln::load
