// kiln internal: the host side of "kiln.host.kernels/1" (see host_kernels.hpp).
#include "load/host_kernels.hpp"

#include <cuda.h>  // entry-point types and CUDA_VERSION only: the driver is reached through device::Driver

#include <cstring>
#include <new>
#include <string>
#include <utility>

#include <kiln/errors.hpp>

#include "device/driver.hpp"

namespace kiln::load {

void write_message(char *message, size_t message_size, std::string_view text) noexcept {
  if (message == nullptr || message_size == 0) return;
  const size_t length = text.size() < message_size - 1 ? text.size() : message_size - 1;
  std::memcpy(message, text.data(), length);
  message[length] = '\0';
}

HostKernelsService::HostKernelsService(KernelResolver resolver, DriverProcs procs)
    : resolver_(std::move(resolver)), procs_(std::move(procs)) {
  block_.table.struct_size = sizeof(kiln_host_kernels_v1);
  block_.table.get_kernel = &HostKernelsService::get_kernel;
  block_.table.launch = &HostKernelsService::launch;
  block_.table.get_driver_proc = &HostKernelsService::get_driver_proc;
  block_.self = this;
}

const HostKernelsService *HostKernelsService::service_of(const kiln_host_services *host) {
  // The table the plugin called through is the one get_service hands out: its block leads
  // back to the service.
  const void *table = host != nullptr && host->get_service != nullptr
                          ? host->get_service(host, KILN_HOST_KERNELS_SERVICE_ID)
                          : nullptr;
  return table != nullptr ? reinterpret_cast<const Block *>(table)->self : nullptr;
}

void *HostKernelsService::driver_proc(const char *symbol, int cuda_version, std::string *why) const {
  if (procs_) return procs_(symbol, cuda_version, why);
  return device::Driver::instance().proc_for(symbol, cuda_version, why);
}

kiln_status HostKernelsService::launch(const kiln_host_services *host, int32_t device_ordinal, void *cu_function,
                                       const uint32_t grid[3], const uint32_t block[3], uint32_t shared_bytes,
                                       void *cu_stream, void **kernel_params, char *message,
                                       size_t message_size) {
  try {
    if (host == nullptr || cu_function == nullptr || grid == nullptr || block == nullptr) {
      write_message(message, message_size,
                    "kiln.host.kernels/1 launch: host, cu_function, grid and block must not be NULL");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (grid[0] == 0 || grid[1] == 0 || grid[2] == 0 || block[0] == 0 || block[1] == 0 || block[2] == 0) {
      write_message(message, message_size, "kiln.host.kernels/1 launch: a grid or block dimension is 0");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    if (device_ordinal < 0 || device_ordinal >= kMaxDevices) {
      write_message(message, message_size,
                    "kiln.host.kernels/1 launch: device ordinal " + std::to_string(device_ordinal) + " is out of range");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    const HostKernelsService *self = service_of(host);
    if (self == nullptr) {
      write_message(message, message_size, "kiln.host.kernels/1 launch: this host does not offer the service");
      return KILN_ERR_INTERNAL;
    }
    const auto context = static_cast<CUcontext>(self->contexts_[static_cast<std::size_t>(device_ordinal)].load(std::memory_order_acquire));
    const auto get_current = reinterpret_cast<decltype(&::cuCtxGetCurrent)>(self->ctx_get_current_.load(std::memory_order_acquire));
    const auto set_current = reinterpret_cast<decltype(&::cuCtxSetCurrent)>(self->ctx_set_current_.load(std::memory_order_acquire));
    const auto launch_kernel = reinterpret_cast<decltype(&::cuLaunchKernel)>(self->launch_kernel_.load(std::memory_order_acquire));
    if (context == nullptr || get_current == nullptr || set_current == nullptr || launch_kernel == nullptr) {
      write_message(message, message_size,
                    "kiln.host.kernels/1 launch: no kernel was loaded on device " + std::to_string(device_ordinal) +
                        " through get_kernel; call get_kernel first (in activate)");
      return KILN_ERR_STATE;
    }
    CUcontext current = nullptr;
    CUresult result = get_current(&current);
    if (result == CUDA_SUCCESS && current != context) result = set_current(context);
    if (result == CUDA_SUCCESS) {
      result = launch_kernel(static_cast<CUfunction>(cu_function), grid[0], grid[1], grid[2], block[0], block[1],
                             block[2], shared_bytes, static_cast<CUstream>(cu_stream), kernel_params, nullptr);
    }
    if (result != CUDA_SUCCESS) {
      write_message(message, message_size,
                    "kiln.host.kernels/1 launch on device " + std::to_string(device_ordinal) + " failed: " +
                        device::Driver::builtin_error_text(result));
      return result == CUDA_ERROR_OUT_OF_MEMORY ? KILN_ERR_OUT_OF_MEMORY : KILN_ERR_DEVICE;
    }
    write_message(message, message_size, "");
    return KILN_OK;
  } catch (...) {
    write_message(message, message_size, "kiln.host.kernels/1 launch: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  }
}

kiln_status HostKernelsService::get_driver_proc(const kiln_host_services *host, const char *symbol,
                                                int32_t cuda_version, void **proc_out, char *message,
                                                size_t message_size) {
  if (proc_out != nullptr) *proc_out = nullptr;
  try {
    if (host == nullptr || symbol == nullptr || proc_out == nullptr) {
      write_message(message, message_size, "kiln.host.kernels/1 get_driver_proc: host, symbol and proc_out must not be NULL");
      return KILN_ERR_INVALID_ARGUMENT;
    }
    const HostKernelsService *self = service_of(host);
    if (self == nullptr) {
      write_message(message, message_size, "kiln.host.kernels/1 get_driver_proc: this host does not offer the service");
      return KILN_ERR_INTERNAL;
    }
    std::string why;
    void *proc = self->driver_proc(symbol, static_cast<int>(cuda_version), &why);
    if (proc == nullptr) {
      write_message(message, message_size, "driver entry point " + std::string(symbol) + " unavailable: " + why);
      return KILN_ERR_DEVICE;
    }
    *proc_out = proc;
    write_message(message, message_size, "");
    return KILN_OK;
  } catch (...) {
    write_message(message, message_size, "kiln.host.kernels/1 get_driver_proc: out of host memory");
    return KILN_ERR_OUT_OF_MEMORY;
  }
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
  const HostKernelsService *self = service_of(host);
  if (self == nullptr) {
    write_message(message, message_size,
                  "kiln.host.kernels/1 get_kernel: this host does not offer the service");
    return KILN_ERR_INTERNAL;
  }
  KernelRequest request{consumer, name, kernel_name, static_cast<int>(device_ordinal)};
  return self->call(request, cu_function_out, message, message_size);
}

kiln_status HostKernelsService::call(const KernelRequest &request, void **out, char *message,
                                     size_t size) const {
  try {
    KernelAnswer answer;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      answer = resolver_(request);
      // What launch needs, fetched here (a setup thread) so that launch takes no lock.
      if (answer.function != nullptr && answer.context != nullptr && request.device_ordinal < kMaxDevices) {
        if (launch_kernel_.load(std::memory_order_acquire) == nullptr) {
          std::string why;
          void *get = driver_proc("cuCtxGetCurrent", CUDA_VERSION, &why);
          void *set = driver_proc("cuCtxSetCurrent", CUDA_VERSION, &why);
          void *run = driver_proc("cuLaunchKernel", CUDA_VERSION, &why);
          if (get != nullptr && set != nullptr && run != nullptr) {
            ctx_get_current_.store(get, std::memory_order_release);
            ctx_set_current_.store(set, std::memory_order_release);
            launch_kernel_.store(run, std::memory_order_release);
          }
        }
        contexts_[static_cast<std::size_t>(request.device_ordinal)].store(answer.context, std::memory_order_release);
      }
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
      case ErrorKind::timeout:
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
