// The shared state of a loaded plugin: the dlopen handle, the negotiated entry table and the
// host services table the plugin was given (which must outlive every instance).
#pragma once

#include <string>

#include <kiln/log.hpp>
#include <kiln/module.hpp>

namespace kiln {

struct Instance::Library {
  void *handle = nullptr;
  const kiln_plugin_entry *entry = nullptr;
  std::uint32_t abi_version = 0;
  std::string file;
  LogCallback log;
  kiln_host_services host{};

  Library() = default;
  Library(const Library &) = delete;
  Library &operator=(const Library &) = delete;
  ~Library();
};

}  // namespace kiln
