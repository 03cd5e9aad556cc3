#include <dlfcn.h>
#include <unistd.h>

#include <cstring>
#include <functional>
#include <string>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>
#include <kiln/version.hpp>

#include "device/contexts.hpp"
#include "load/boundary.hpp"
#include "load/library.hpp"
#include "load/mapped_files.hpp"
#include "load/report_pool.hpp"

namespace kiln {
namespace {

// A setup call into the plugin, inside the instance's partition when it has one. A partition that
// cannot be entered (its driver call failed) is logged and the call made where the thread is.
void in_partition(const Instance::Library &library, const std::shared_ptr<const GpuPartition> &partition,
                  const char *what, const std::function<void()> &call) noexcept {
  if (!partition) return call();
  try {
    partition->run_inside(call);
  } catch (const std::exception &error) {
    if (library.log) {
      library.log(LogLevel::warning, std::string("plugin ") + library.file + ": " + what + " outside its partition: " +
                                      error.what());
    }
    call();
  }
}

// destroy from a destructor or a move: a throwing plugin is logged, never fatal to the host.
void destroy_quietly(const Instance::Library &library, const std::shared_ptr<const GpuPartition> &partition,
                     kiln_instance *instance) noexcept {
  in_partition(library, partition, "destroy", [&] {
    load::call_plugin_quietly(library.log, library.file, "destroy", [&] { library.entry->destroy(instance); });
  });
}

// The placement checks made before the plugin runs.
void check_placement(const Instance::Library &library, const ActivateOptions &options) {
  if (!options.partition && options.stream_priority == 0) return;
  const std::string what = options.partition ? "a GPU partition (" + options.partition->describe() + ")"
                                             : "stream priority " + std::to_string(options.stream_priority);
  if (options.device < 0) {
    throw UsageError("plugin " + library.file + ": " + what +
                     " asked for a host-only activate (device -1), which runs nothing on a GPU; activate on a "
                     "device, or drop the placement");
  }
  if (options.partition && options.partition->device() != options.device) {
    throw UsageError("plugin " + library.file + ": activate on device " + std::to_string(options.device) + " in " +
                     what + ": a partition of another device; split device " + std::to_string(options.device) +
                     "'s SMs instead");
  }
  if (library.abi_version < KILN_ABI_MAKE_VERSION(1, 1)) {
    throw AbiError("plugin " + library.file + " speaks ABI " + abi_version_text(library.abi_version) + "; placing it in " +
                   what + " needs ABI 1.1, which tells the plugin where to run (abi/README.md, \"Versions\"): "
                   "rebuild it against kiln's current headers, or activate it unplaced");
  }
  if (options.stream_priority != 0) device::check_stream_priority(options.device, options.stream_priority);
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
    : library_(std::move(other.library_)),
      instance_(other.instance_),
      active_(other.active_),
      partition_(std::move(other.partition_)) {
  other.instance_ = nullptr;
  other.active_ = false;
}

Instance &Instance::operator=(Instance &&other) noexcept {
  if (this != &other) {
    if (instance_ != nullptr) destroy_quietly(*library_, partition_, instance_);
    library_ = std::move(other.library_);
    instance_ = other.instance_;
    active_ = other.active_;
    partition_ = std::move(other.partition_);
    other.instance_ = nullptr;
    other.active_ = false;
  }
  return *this;
}

Instance::~Instance() {
  if (instance_ != nullptr) destroy_quietly(*library_, partition_, instance_);  // destroy deactivates first
}

void Instance::activate(int device_ordinal, std::uint32_t max_batch) {
  ActivateOptions options;
  options.device = device_ordinal;
  options.max_batch = max_batch;
  activate(options);
}

void Instance::activate(const ActivateOptions &options) {
  check_placement(*library_, options);
  const std::shared_ptr<const GpuPartition> &partition = options.partition;
  kiln_activate_params params{};
  params.struct_size = sizeof params;
  params.device_ordinal = options.device;
  params.max_batch = options.max_batch;
  params.flags = partition ? KILN_ACTIVATE_IN_CURRENT_CONTEXT : 0;
  params.stream_priority = options.stream_priority;
  params.sm_count = partition ? partition->sm_count() : 0;
  char message[1024] = "";
  kiln_status status = KILN_OK;
  bool left_partition = false;
  const auto call = [&] {
    status = load::call_plugin(library_->file, "activate", [&] {
      return library_->entry->activate(instance_, &params, message, sizeof message);
    });
    if (partition && status == KILN_OK) {
      left_partition = device::current_context() != partition->cuda_context();
      if (left_partition) {
        load::call_plugin_quietly(library_->log, library_->file, "deactivate",
                                  [&] { library_->entry->deactivate(instance_); });
      }
    }
  };
  if (partition) {
    partition->run_inside(call);
  } else {
    call();
  }
  const std::string where = "device " + std::to_string(options.device) + ", max batch " +
                            std::to_string(options.max_batch) +
                            (partition ? ", in " + partition->describe() : std::string()) +
                            (options.stream_priority != 0 ? ", stream priority " + std::to_string(options.stream_priority)
                                                          : std::string());
  if (left_partition) {
    throw AbiError("plugin " + library_->file + " left its partition during activate (" + where +
                   "): another CUDA context was current when it returned (a cudaSetDevice?), so its streams would "
                   "run on the whole device; it must honour KILN_ACTIVATE_IN_CURRENT_CONTEXT (abi/kiln/plugin.h)");
  }
  if (status != KILN_OK) {
    const std::string text = "plugin " + library_->file + " refused activate (" + where + ", status " +
                             std::to_string(status) + "): " + load::message_text(message);
    if (status == KILN_ERR_DEVICE) throw Error(ErrorKind::other, text);
    throw AbiError(text);
  }
  partition_ = partition;
  active_ = true;
}

void Instance::deactivate() noexcept {
  if (instance_ != nullptr && active_) {
    in_partition(*library_, partition_, "deactivate", [&] {
      load::call_plugin_quietly(library_->log, library_->file, "deactivate",
                                [&] { library_->entry->deactivate(instance_); });
    });
  }
  active_ = false;
  partition_.reset();
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
    if (instance != nullptr) destroy_quietly(*library_, nullptr, instance);  // a failed create keeps nothing
    throw AbiError("plugin " + library_->file + " failed to create an instance (status " + std::to_string(status) +
                   (status == KILN_OK ? ", yet no instance" : "") + "): " + load::message_text(message));
  }
  return Instance(library_, instance);
}

}  // namespace kiln
