// The shared state of a loaded plugin: the dlopen handle, the negotiated entry table and the
// host services table the plugin was given (which must outlive every instance), and the device
// kernels the plugin was handed through "kiln.host.kernels/1" (which must too).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>

#include <kiln/kernels.hpp>
#include <kiln/log.hpp>
#include <kiln/module.hpp>

#include "load/host_kernels.hpp"

namespace kiln {

struct Instance::Library {
  void *handle = nullptr;
  // The descriptor dlopen mapped as /proc/self/fd/<n>, shared by every load of this file
  // (load/mapped_files.hpp says why); released after the dlclose.
  int mapped_fd = -1;
  const void *mapped_probe = nullptr;  // an address inside the library, for release_mapped_fd
  bool kept_mapped = false;  // Module::keep_mapped took a reference that is never released
  const kiln_plugin_entry *entry = nullptr;  // &entry_copy once bound
  kiln_plugin_entry entry_copy{};            // the plugin's table up to its struct_size, the rest zero
  std::uint32_t abi_version = 0;
  std::string file;
  LogCallback log;
  kiln_host_services host{};

  // kiln.host.kernels/1: where artifacts come from, what was loaded (per consumer, name,
  // device; touched only under the service's lock), and the service itself. Destroyed before
  // the plugin is unloaded, after its last instance (every Instance holds this Library).
  // The service is made on the plugin's first get_service (most plugins never ask; a load need
  // not build one), once whatever thread asks.
  std::shared_ptr<const load::KernelSource> kernel_source;
  std::map<std::tuple<std::string, std::string, int>, KernelLibrary> kernels;
  std::once_flag kernel_service_once;
  std::unique_ptr<load::HostKernelsService> kernel_service;

  Library() = default;
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  ~Library();
};

}  // namespace kiln
