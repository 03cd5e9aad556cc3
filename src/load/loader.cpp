#include "support/elapsed.hpp"
#include "load/loader.hpp"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "device/driver.hpp"
#include "artifact/abi_layout.hpp"
#include "load/boundary.hpp"
#include "load/library.hpp"
#include "load/mapped_files.hpp"
#include "store/maintenance/use_lock.hpp"
#include "load/verify.hpp"
#include "files/safety.hpp"
#include "files/unique_fd.hpp"
#include "files/file_identity.hpp"

namespace kiln {
namespace {

using support::ms_since;

using Clock = std::chrono::steady_clock;

// Ends one timed step and starts the next with one clock read.
Clock::time_point next_step(Clock::time_point start, double *ms) {
  const auto now = Clock::now();
  *ms = std::chrono::duration<double, std::milli>(now - start).count();
  return now;
}

// `target` = load::bounded_string(text), without building a string when it holds that already.
void assign_bounded(std::string &target, const char *text) {
  const std::string_view value = load::bounded_view(text);
  if (target != value) target.assign(value.data(), value.size());
}

// A plugin listing more interface ids than this is broken (or lacks the terminating NULL).
constexpr std::size_t kMaxInterfaceIds = 1024;

void host_log(const kiln_host_services *host, std::int32_t level, const char *message) {
  const auto *library = static_cast<const Instance::Library *>(host->host_data);
  if (library == nullptr || !library->log || message == nullptr) return;
  const LogLevel mapped = level <= KILN_LOG_DEBUG     ? LogLevel::debug
                          : level == KILN_LOG_INFO    ? LogLevel::info
                          : level == KILN_LOG_WARNING ? LogLevel::warning
                                                      : LogLevel::error;
  try {
    library->log(mapped, "[" + library->file + "] " + message);
  } catch (...) {
    // A throwing log callback must not unwind into plugin code.
  }
}

// The kernel service of one loaded plugin: each (consumer, name, device) is loaded once, kept in
// the Library (so it outlives every instance), and asked for kernels by name.
std::unique_ptr<load::HostKernelsService> make_kernel_service(Instance::Library *library) {
  return std::make_unique<load::HostKernelsService>([library](const load::KernelRequest &request) {
    const auto key = std::make_tuple(request.consumer, request.name, request.device_ordinal);
    auto found = library->kernels.find(key);
    if (found == library->kernels.end()) {
      device::Driver &driver = device::Driver::instance();
      if (driver.ok() && request.device_ordinal >= driver.device_count()) {  // the ABI's invalid argument
        throw UsageError("device ordinal " + std::to_string(request.device_ordinal) + " does not exist: the driver sees " +
                         std::to_string(driver.device_count()) + " device(s)");
      }
      KernelLibrary loaded = (*library->kernel_source)(request.consumer, request.name, request.device_ordinal);
      found = library->kernels.emplace(key, std::move(loaded)).first;
      if (library->log) {
        library->log(LogLevel::info, "[" + library->file + "] kiln.host.kernels/1: loaded " + request.consumer + "/" +
                                         request.name + " on device " + std::to_string(request.device_ordinal) + ": " +
                                         found->second.image().describe() + ", " + found->second.choice().how);
      }
    }
    const KernelLibrary &kernels = found->second;
    return load::KernelAnswer{kernels.function(request.kernel),
                              kernels.image().describe() + ": " + kernels.choice().how, kernels.context()};
  });
}

const void *host_get_service(const kiln_host_services *host, const char *service_id) {
  if (host == nullptr || service_id == nullptr) return nullptr;
  auto *library = static_cast<Instance::Library *>(host->host_data);
  if (library == nullptr || !library->kernel_source) return nullptr;
  try {
    std::call_once(library->kernel_service_once,
                   [library] { library->kernel_service = make_kernel_service(library); });
  } catch (...) {
    return nullptr;  // out of memory: no service (the plugin is told NULL), never an exception into it
  }
  return library->kernel_service->get_service(service_id);
}

// dlopen goes through "/proc/self/fd/N" (load::descriptor_name): the name under which dlopen
// maps exactly the inode that was checked. Without /proc there is no such name, and reopening
// by path would let a file swapped in after the checks run unchecked: the load is refused
// (missing_proc_error), never retried by path. Nothing is asked up front: a lookup in /proc
// costs a fresh process tens of µs, and a dlopen that fails tells the same.
[[noreturn]] void throw_missing_proc(const std::string &file) {
  throw IoError("cannot load " + file + " safely: /proc/self/fd is missing, so kiln cannot dlopen the very file it "
                "verified (reopening it by path would let a file swapped in after the check run unverified); "
                "mount /proc in this process's mount namespace (e.g. mount -t proc proc /proc, or give the "
                "container its /proc) and load again");
}

// Everything the plugin's answer must satisfy before any of its tables is used. Only fields
// the negotiated version defines are required; the host reads none past entry->struct_size.
void check_answer(const kiln_negotiation_answer &answer, std::uint32_t abi_min, const Resolution &resolution) {
  const auto who = [&resolution] { return "plugin " + resolution.file; };  // messages only: not built on success
  if (answer.abi_version < abi_min || answer.abi_version > kAbiVersion) {
    throw AbiError(who() + " answered ABI " + abi_version_text(answer.abi_version) + ", outside the offered range [" +
                   abi_version_text(abi_min) + ", " + abi_version_text(kAbiVersion) + "]; it is broken: rebuild it");
  }
  const kiln_plugin_entry *entry = answer.entry;
  if (entry == nullptr) throw AbiError(who() + " accepted negotiation but returned no entry table; rebuild it");
  const artifact::AbiLayout *layout = artifact::abi_layout(answer.abi_version);
  if (layout == nullptr || entry->struct_size < layout->entry_size) {
    throw AbiError(who() + " returned a " + std::to_string(entry->struct_size) + "-byte entry table; ABI " +
                   abi_version_text(answer.abi_version) + " defines " +
                   std::to_string(layout != nullptr ? layout->entry_size : 0) +
                   " bytes: rebuild it against this kiln's abi/ headers");
  }
}

// The stamp the running code points to must be the one checked in the file's bytes.
void check_entry_stamp(const kiln_plugin_entry &entry, const Resolution &resolution) {
  const auto who = [&resolution] { return "plugin " + resolution.file; };  // messages only
  if (entry.create == nullptr || entry.activate == nullptr || entry.deactivate == nullptr ||
      entry.destroy == nullptr || entry.get_interface == nullptr) {
    throw AbiError(who() + " has a NULL lifecycle function in its entry table; rebuild it with KILN_PLUGIN");
  }
  const kiln_build_stamp *stamp = entry.stamp;
  if (stamp == nullptr || std::memcmp(stamp->magic, KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE) != 0 ||
      stamp->struct_size < artifact::kMinStampSize) {
    throw AbiError(who() + " has no valid build stamp in its entry table; rebuild it with KILN_PLUGIN");
  }
  const std::string_view stamped(stamp->content_key, strnlen(stamp->content_key, KILN_STAMP_KEY_SIZE));
  if (stamped != resolution.content_key) {
    throw IntegrityError(who() + " carries build stamp " + std::string(stamped) + " but its manifest entry " +
                         resolution.consumer + "/" + resolution.name + " names content key " + resolution.content_key +
                         ": the file does not belong to this entry; republish or rebuild the artifact");
  }
}

// The plugin file opened and checked: O_NOFOLLOW (a symlink planted in an entry is refused,
// never followed), O_NONBLOCK (a FIFO in its place is refused by the safety check instead of
// hanging the host in open()), then the in-use lock and one fstat for both the safety check and
// "not evicted meanwhile": kiln gc skips the file from the lock on until it is unmapped.
int open_checked(const Resolution &resolution, files::FileIdentity *id) {
  files::UniqueFd fd(::open(resolution.file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT) {
      throw IntegrityError("artifact file " + resolution.file + " of " + resolution.consumer + "/" + resolution.name +
                           " is missing from its store entry: the entry was damaged; republish or rebuild it");
    }
    if (error == ELOOP) {
      throw IntegrityError("refusing to load " + resolution.file +
                           ": it is a symlink (store entries hold regular files only); republish the artifact");
    }
    throw IoError("cannot open artifact file " + resolution.file + ": " + std::strerror(error));
  }
  store::hold_in_use(fd.get(), resolution.file);
  std::uint64_t links = 0;
  *id = files::check_fd_safe_to_execute(fd.get(), resolution.file, &links);
  store::check_not_evicted(links, resolution.file);
  return fd.release();
}

// One reference on a descriptor of load/mapped_files.hpp, dropped unless released to the library.
struct MappedReference {
  int fd;
  explicit MappedReference(int held) noexcept : fd(held) {}
  MappedReference(const MappedReference &) = delete;
  MappedReference &operator=(const MappedReference &) = delete;
  ~MappedReference() { load::release_mapped_fd(fd); }
  int release() noexcept { return std::exchange(fd, -1); }
};

// The descriptor kept by the last load of this resolution, when it still is the checked file:
// the same device and inode, a link left (a replaced or evicted file has none), safe to
// execute, and the in-use lock held. Then one reference is held on it (the caller's to drop)
// and *id is its identity; -1 when there is none, and a fresh open follows. gc evicting the file
// between the fstat and the lock leaves this load mapping verified bytes gc has just unlinked:
// the Module works, and the entry is gone from the store as gc decided.
int reuse_checked_fd(std::uint64_t resolution_serial, const std::string &file, files::FileIdentity *id) {
  const load::KeptFd kept = load::reuse_kept_fd(resolution_serial);
  if (kept.fd < 0) return -1;
  const auto same_file = [&kept](const files::FileIdentity &seen) {
    return seen.device == kept.device && seen.inode == kept.inode;
  };
  std::uint64_t links = 0;
  try {
    *id = files::check_fd_safe_to_execute(kept.fd, file, &links);
  } catch (...) {
    // Unsafe now (its mode changed): refused as a fresh open would be; a number that names
    // another file (the host closed kiln's descriptor) is dropped, and a fresh open decides.
    const auto seen = files::identify_fd(kept.fd);
    const bool ours = seen && same_file(*seen);
    load::forget_kept_fd(kept.fd, ours);
    if (ours) throw;
    return -1;
  }
  if (!same_file(*id) || links == 0) {
    load::forget_kept_fd(kept.fd, same_file(*id));
    return -1;
  }
  if (kept.idle && !store::try_hold_in_use(kept.fd)) {
    load::release_mapped_fd(kept.fd);  // gc is evicting it: the fresh open waits and tells
    return -1;
  }
  return kept.fd;
}

}  // namespace

Module Loader::open(std::unique_ptr<LoadReport> owned_report, std::uint32_t abi_required, const LogCallback &log,
                    std::shared_ptr<const load::KernelSource> kernels,
                    const store::VerificationRecords *records, ReportHome home) {
  const std::uint64_t resolution_serial = home.serial;
  LoadReport &report = *owned_report;  // filled in place: the Module takes this very object
  const Resolution &resolution = report.resolution;
  const std::uint32_t abi_min =
      abi_required != 0 ? abi_required : KILN_ABI_MAKE_VERSION(KILN_ABI_VERSION_MAJOR_OF(kAbiVersion), 0);

  auto start = Clock::now();
  files::FileIdentity id;
  // A warm load of a remembered resolution reuses the descriptor its last load kept; the
  // reference taken on it is dropped if anything below throws before the library owns it.
  MappedReference kept(reuse_checked_fd(resolution_serial, resolution.file, &id));
  files::UniqueFd fd;
  if (kept.fd < 0) {
    fd.reset(open_checked(resolution, &id));
  }
  // Store safety of its directories, digest and build stamp from the file's bytes: nothing of
  // the plugin runs (not even its constructors, which dlopen would) before all hold.
  load::verify_before_dlopen(kept.fd >= 0 ? kept.fd : fd.get(), id, resolution, records, log);
  start = next_step(start, &report.timings.verify_ms);
  auto library = std::make_shared<Instance::Library>();
  library->file = resolution.file;
  library->log = log;
  library->kernel_source = std::move(kernels);
  // Map the verified descriptor itself (or the one already mapping this inode: mapped_files.hpp
  // says why), so a file swapped in after the checks is never run.
  library->mapped_fd =
      kept.fd >= 0 ? kept.release() : load::share_mapped_fd(fd, id.device, id.inode, resolution_serial);
  library->handle = ::dlopen(load::descriptor_name(library->mapped_fd).c_str(), RTLD_NOW | RTLD_LOCAL);
  library->mapped_probe = load::note_dlopen_name(library->mapped_fd, library->handle);
  if (library->handle == nullptr) {
    const char *error = ::dlerror();
    if (::access("/proc/self/fd", X_OK) != 0) throw_missing_proc(resolution.file);
    throw AbiError("cannot dlopen " + resolution.file + ": " + (error != nullptr ? error : "unknown error") +
                   " (a missing dependency must be installed on this machine; a file that is not a shared "
                   "object must be republished)");
  }
  start = next_step(start, &report.timings.dlopen_ms);
  ::dlerror();
  const auto negotiate =
      reinterpret_cast<kiln_plugin_negotiate_fn>(::dlsym(library->handle, KILN_PLUGIN_NEGOTIATE_SYMBOL));
  if (negotiate == nullptr) {
    throw AbiError(resolution.file + " is not a kiln plugin: it exports no " KILN_PLUGIN_NEGOTIATE_SYMBOL
                   "; build it with the KILN_PLUGIN macro of <kiln/plugin.hpp>");
  }
  library->host.struct_size = sizeof(kiln_host_services);
  library->host.host_data = library.get();
  library->host.host_name = "kiln";
  library->host.host_version = kVersion;
  library->host.log = &host_log;
  library->host.get_service = &host_get_service;

  kiln_negotiation_request request{};
  request.struct_size = sizeof request;
  request.abi_min = abi_min;
  request.abi_max = kAbiVersion;
  request.host = &library->host;
  kiln_negotiation_answer answer{};
  answer.struct_size = sizeof answer;
  const kiln_status status = load::call_plugin(resolution.file, KILN_PLUGIN_NEGOTIATE_SYMBOL,
                                               [&] { return negotiate(&request, &answer); });
  if (status != KILN_OK) {
    throw AbiError("plugin " + resolution.file + " offers no ABI version in [" + abi_version_text(abi_min) + ", " +
                   abi_version_text(kAbiVersion) + "] (negotiation status " + std::to_string(status) +
                   "): rebuild it against this kiln's abi/ headers, or use a kiln that speaks its ABI");
  }
  check_answer(answer, abi_min, resolution);
  // The host works on a zeroed copy of the plugin's table, filled up to its struct_size: fields
  // the plugin's version does not have read as absent (NULL), never as foreign memory.
  const std::size_t filled = std::min<std::size_t>(answer.entry->struct_size, sizeof(kiln_plugin_entry));
  std::memcpy(&library->entry_copy, answer.entry, filled);
  library->entry_copy.struct_size = static_cast<std::uint32_t>(filled);
  check_entry_stamp(library->entry_copy, resolution);
  library->entry = &library->entry_copy;
  library->abi_version = answer.abi_version;

  report.abi_version = answer.abi_version;
  // A report given back by a Module of this file usually holds these already: compared, not
  // rebuilt (load/report_pool.hpp).
  assign_bounded(report.plugin_id, library->entry->plugin_id);
  assign_bounded(report.plugin_version, library->entry->plugin_version);
  std::size_t count = 0;
  if (const char *const *ids = library->entry->interface_ids) {
    for (; count < kMaxInterfaceIds && ids[count] != nullptr; ++count) {
      if (count < report.interfaces.size()) {
        assign_bounded(report.interfaces[count], ids[count]);
      } else {
        report.interfaces.push_back(load::bounded_string(ids[count]));
      }
    }
  }
  report.interfaces.resize(count);
  report.timings.bind_ms = ms_since(start);
  Module module(std::move(library), std::move(owned_report));
  module.report_pool_ = std::move(home.pool);
  module.report_serial_ = home.serial;
  module.report_device_ = home.device;
  return module;
}

}  // namespace kiln
