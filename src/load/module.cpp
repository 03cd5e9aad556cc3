#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "load/boundary.hpp"
#include "load/library.hpp"
#include "load/mapped_files.hpp"
#include "load/report_pool.hpp"

namespace kiln {
namespace {

// destroy from a destructor or a move: a throwing plugin is logged, never fatal to the host.
void destroy_quietly(const Instance::Library &library, kiln_instance *instance) noexcept {
  load::call_plugin_quietly(library.log, library.file, "destroy", [&] { library.entry->destroy(instance); });
}

}  // namespace

Instance::Library::~Library() {
  // No instance is left: nothing of the plugin runs any more. Unload the kernels it was handed
  // (synchronously with nothing: its deactivate had to finish its work), then the plugin.
  kernel_service.reset();
  kernels.clear();
  if (handle != nullptr) ::dlclose(handle);
  load::release_mapped_fd(mapped_fd, mapped_probe);
}

// ---- Instance ----

Instance::Instance(std::shared_ptr<Library> library, kiln_instance *instance)
    : library_(std::move(library)), instance_(instance) {}

Instance::Instance(Instance &&other) noexcept
    : library_(std::move(other.library_)), instance_(other.instance_), active_(other.active_) {
  other.instance_ = nullptr;
  other.active_ = false;
}

Instance &Instance::operator=(Instance &&other) noexcept {
  if (this != &other) {
    if (instance_ != nullptr) destroy_quietly(*library_, instance_);
    library_ = std::move(other.library_);
    instance_ = other.instance_;
    active_ = other.active_;
    other.instance_ = nullptr;
    other.active_ = false;
  }
  return *this;
}

Instance::~Instance() {
  if (instance_ != nullptr) destroy_quietly(*library_, instance_);  // destroy deactivates first
}

void Instance::activate(int device_ordinal, std::uint32_t max_batch) {
  kiln_activate_params params{};
  params.struct_size = sizeof params;
  params.device_ordinal = device_ordinal;
  params.max_batch = max_batch;
  char message[1024] = "";
  const kiln_status status = load::call_plugin(library_->file, "activate", [&] {
    return library_->entry->activate(instance_, &params, message, sizeof message);
  });
  if (status != KILN_OK) {
    const std::string text = "plugin " + library_->file + " refused activate (device " + std::to_string(device_ordinal) +
                             ", max batch " + std::to_string(max_batch) + ", status " + std::to_string(status) +
                             "): " + load::message_text(message);
    if (status == KILN_ERR_DEVICE) throw Error(ErrorKind::other, text);
    throw AbiError(text);
  }
  active_ = true;
}

void Instance::deactivate() noexcept {
  if (instance_ != nullptr && active_) {
    load::call_plugin_quietly(library_->log, library_->file, "deactivate",
                              [&] { library_->entry->deactivate(instance_); });
  }
  active_ = false;
}

const void *Instance::interface_table(const char *id, std::size_t min_size) const {
  const void *table = load::call_plugin(library_->file, "get_interface",
                                        [&] { return library_->entry->get_interface(instance_, id); });
  if (table == nullptr) return nullptr;
  std::uint32_t size = 0;
  std::memcpy(&size, table, sizeof size);  // every interface table starts with struct_size
  if (size < min_size) {
    throw AbiError("plugin " + library_->file + " answers interface " + id + " with a " + std::to_string(size) +
                   "-byte table, smaller than its first revision (" + std::to_string(min_size) +
                   " bytes): the plugin is broken or built against another header; rebuild it");
  }
  return table;
}

// ---- Module ----

Module::Module(std::shared_ptr<Instance::Library> library, std::unique_ptr<LoadReport> report)
    : library_(std::move(library)), report_(std::move(report)) {}
Module::Module(Module &&) noexcept = default;
Module &Module::operator=(Module &&) noexcept = default;
Module::~Module() {
  if (report_pool_ && report_) report_pool_->give_back(report_serial_, report_device_, std::move(report_));
}

const LoadReport &Module::report() const noexcept { return *report_; }
const kiln_plugin_entry &Module::entry() const noexcept { return *library_->entry; }
std::uint32_t Module::abi_version() const noexcept { return library_->abi_version; }

void Module::keep_mapped() const {
  // One more reference on the library, never released. Its descriptor stays open with it
  // (load/mapped_files.hpp), and later loads of the file reuse it.
  if (library_->kept_mapped || library_->mapped_fd < 0) return;
  if (::dlopen(load::descriptor_name(library_->mapped_fd).c_str(), RTLD_LAZY | RTLD_NOLOAD) == nullptr) {
    const char *error = ::dlerror();
    throw IoError("cannot keep " + library_->file + " mapped: " + (error != nullptr ? error : "unknown error"));
  }
  library_->kept_mapped = true;
}

Instance Module::create_instance() const {
  kiln_create_params params{};
  params.struct_size = sizeof params;
  params.host = &library_->host;
  kiln_instance *instance = nullptr;
  char message[1024] = "";
  const kiln_status status = load::call_plugin(library_->file, "create", [&] {
    return library_->entry->create(&params, &instance, message, sizeof message);
  });
  if (status != KILN_OK || instance == nullptr) {
    if (instance != nullptr) destroy_quietly(*library_, instance);  // a failed create keeps nothing
    throw AbiError("plugin " + library_->file + " failed to create an instance (status " + std::to_string(status) +
                   (status == KILN_OK ? ", yet no instance" : "") + "): " + load::message_text(message));
  }
  return Instance(library_, instance);
}

}  // namespace kiln
