#include "swap/version.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include <kiln/ext/selftest.h>

#include "load/boundary.hpp"
#include "artifact/elf.hpp"
#include "support/elapsed.hpp"
#include "support/failure_point.hpp"

namespace kiln::swap_detail {
namespace {

using support::ms_since;

// Whether the plugin file has an ".nv_fatbin" section: device code the CUDA runtime registers
// when the library is loaded and points into until the process ends (cccl #9367, pytorch #24983).
bool has_cuda_runtime_fatbin(const std::string &file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return true;  // cannot tell: keeping it mapped is the safe side
  struct stat info {};
  bool found = true;
  if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
    void *data = ::mmap(nullptr, static_cast<std::size_t>(info.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (data != MAP_FAILED) {
      const std::string_view bytes(static_cast<const char *>(data), static_cast<std::size_t>(info.st_size));
      found = artifact::find_elf_section(bytes, ".nv_fatbin").has_value();
      ::munmap(data, static_cast<std::size_t>(info.st_size));
    }
  }
  ::close(fd);
  return found;
}

std::string canonical(const std::string &file) {
  char resolved[PATH_MAX];
  return ::realpath(file.c_str(), resolved) != nullptr ? std::string(resolved) : file;
}

}  // namespace

void run_step(std::vector<SwapStep> &steps, const char *step, const std::function<std::string()> &body) {
  const auto start = std::chrono::steady_clock::now();
  std::string detail;
  try {
    detail = body();
  } catch (const StepFailure &) {
    throw;
  } catch (const DeadlineExpired &error) {
    steps.push_back({step, ms_since(start), std::string("timed out: ") + error.what()});
    throw StepFailure{step, error.kind(), error.what(), error.deadline};
  } catch (const Error &error) {
    steps.push_back({step, ms_since(start), std::string("failed: ") + error.what()});
    throw StepFailure{step, error.kind(), error.what()};
  } catch (const std::exception &error) {
    steps.push_back({step, ms_since(start), std::string("failed: ") + error.what()});
    throw StepFailure{step, ErrorKind::other, error.what()};
  }
  steps.push_back({step, ms_since(start), std::move(detail)});
}

std::string with_deadline(const char *step, const char *what, std::chrono::milliseconds limit,
                          const std::vector<Version *> &inside, std::function<std::string()> body) {
  const std::string option = std::string("SwapOptions::deadlines.") + step;
  for (const Version *version : inside) {
    if (version->busy()) {
      throw DeadlineExpired("version " + version->content_key + " (" + version->file +
                         ") is still inside an earlier call that did not return within its deadline; it is not "
                         "called again until that call returns (then it is retired): swap to another version",
                            limit);
    }
  }
  std::shared_ptr<PluginCall> stuck;
  std::string detail = call_with_deadline(limit, std::move(body), &stuck);
  if (!stuck) return detail;
  for (Version *version : inside) version->stuck = stuck;
  const Version &named = *inside.front();
  throw DeadlineExpired("timed out after " + std::to_string(limit.count()) + " ms (" + option + "): plugin " + named.file +
                     " (content key " + named.content_key + ") did not return from " + what +
                     "; the version is quarantined: never served, unloaded once the call returns. Fix the plugin, "
                     "or raise " + option + " if it needs longer",
                        limit);
}

std::string run_selftest(Version &v, const SwapOptions &options) {
  Version *version = &v;
  return with_deadline("selftest", "its self-test (kiln.selftest/1 run)", options.deadlines.selftest, {version}, [version] {
    const auto *selftest = version->instance->interface<kiln_selftest_v1>(
        KILN_SELFTEST_INTERFACE_ID, offsetof(kiln_selftest_v1, run) + sizeof(kiln_selftest_v1::run));
    if (selftest == nullptr || selftest->run == nullptr) return std::string("not offered (the plugin has no kiln.selftest/1)");
    char message[1024] = "";
    const auto start = std::chrono::steady_clock::now();
    const kiln_status status = load::call_plugin(version->file, "kiln.selftest/1 run", [&] {
      return selftest->run(version->instance->handle(), message, sizeof message);
    });
    if (status != KILN_OK) {
      throw AbiError("plugin " + version->file + " (content key " + version->content_key +
                     ") failed its self-test (status " + std::to_string(status) + "): " + load::message_text(message) +
                     "; it is not served: fix or rebuild this version");
    }
    std::ostringstream detail;
    detail << "passed";
    if (message[0] != '\0') detail << ": " << load::message_text(message);
    detail << " (" << static_cast<int>(ms_since(start) * 10) / 10.0 << " ms)";
    return detail.str();
  });
}

static void prepare_steps(Version &v, const SwapOptions &options, std::uint64_t serial, std::vector<SwapStep> &steps) {
  Version *version = &v;
  // The calls into the plugin capture the version and copies: a call past its deadline goes on
  // running after the swap returned.
  run_step(steps, "create", [&] {
    return with_deadline("create", "create", options.deadlines.create, {version}, [version] {
      version->instance.emplace(version->module.create_instance());
      return std::string("created");
    });
  });
  run_step(steps, "activate", [&] {
    ActivateOptions activate;
    activate.device = options.device;
    activate.max_batch = options.max_batch;
    activate.partition = options.partition;
    activate.stream_priority = options.stream_priority;
    return with_deadline("activate", "activate", options.deadlines.activate, {version}, [version, activate] {
      version->instance->activate(activate);
      std::string detail = "device " + std::to_string(activate.device) + ", max batch " + std::to_string(activate.max_batch);
      if (activate.partition) detail += ", " + activate.partition->describe();
      if (activate.stream_priority != 0) detail += ", stream priority " + std::to_string(activate.stream_priority);
      return detail;
    });
  });
  run_step(steps, "interface", [&] {
    const void *table = version->instance->interface_table(options.interface_id.c_str(), options.interface_min_size);
    if (table == nullptr) {
      throw AbiError("plugin " + version->file + " (content key " + version->content_key + ") does not offer " +
                     options.interface_id + "; the serving version does: publish or build a version offering it");
    }
    version->served.table = table;
    return options.interface_id;
  });
  version->served.instance = version->instance->handle();
  version->served.serial = serial;
  version->served.content_key = version->content_key.c_str();
  run_step(steps, "selftest", [&] { return run_selftest(*version, options); });
}

std::unique_ptr<Version> make_version(Module module) {
  auto version = std::make_unique<Version>(std::move(module));
  const Resolution &resolution = version->module.report().resolution;
  version->content_key = resolution.content_key;
  version->file = resolution.file;
  struct stat info {};
  if (::stat(version->file.c_str(), &info) == 0) {
    version->device = info.st_dev;
    version->inode = info.st_ino;
  }
  version->registers_cuda_runtime = has_cuda_runtime_fatbin(version->file);
  return version;
}

void prepare_version(Version &version, const SwapOptions &options, std::uint64_t serial, std::vector<SwapStep> &steps) {
  // A refused candidate is dropped as a retired one is: one with device code the CUDA runtime
  // registered stays mapped. One still inside a call is the caller's to quarantine.
  try {
    prepare_steps(version, options, serial, steps);
  } catch (...) {
    if (version.registers_cuda_runtime && !version.busy()) {
      try {
        version.module.keep_mapped();
      } catch (const Error &) {
      }
    }
    throw;
  }
}

void keep_for_process(std::unique_ptr<Version> version) noexcept {
  // Never destroyed: the versions in it must outlive static destruction too (their calls may
  // still run while the process exits).
  static auto *kept = new std::vector<std::unique_ptr<Version>>();
  static auto *mutex = new std::mutex();
  try {
    std::lock_guard<std::mutex> lock(*mutex);
    kept->push_back(std::move(version));
  } catch (...) {
    (void)version.release();  // no memory to note it: leaked all the same
  }
}

bool mapped_in_process(std::uint64_t device, std::uint64_t inode) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  const unsigned major_id = major(device), minor_id = minor(device);
  while (std::getline(maps, line)) {
    // address perms offset dev(major:minor, hex) inode path
    std::istringstream fields(line);
    std::string address, perms, offset, dev;
    std::uint64_t ino = 0;
    if (!(fields >> address >> perms >> offset >> dev >> ino) || ino != inode) continue;
    unsigned major_seen = 0, minor_seen = 0;
    if (std::sscanf(dev.c_str(), "%x:%x", &major_seen, &minor_seen) == 2 && major_seen == major_id &&
        minor_seen == minor_id) {
      return true;
    }
  }
  return false;
}

bool retire(std::unique_ptr<Version> &version, RetiredVersion &retired, const LogCallback &log,
            std::chrono::milliseconds limit) {
  // Everything that allocates comes first, while the version is untouched.
  KILN_FAILURE_POINT("swap.retire");
  retired.content_key = version->content_key;
  retired.serial = version->served.serial;
  const std::string file = canonical(version->file);
  const std::uint64_t device = version->device, inode = version->inode;
  const bool keep = version->registers_cuda_runtime;
  std::string kept_note, still_mapped_note;
  if (keep) {
    kept_note = "kept mapped: " + file + " has an .nv_fatbin section (device code registered with the CUDA runtime, "
                "which must not be unloaded); its instance was destroyed";
  } else {
    still_mapped_note = file + " is still mapped: another Module of it is alive, or the library cannot be unloaded "
                        "(STB_GNU_UNIQUE symbols, RTLD_NODELETE, thread_local destructors: abi/README.md \"Swap-safe plugins\")";
  }
  std::string unchecked_note = "unloaded; whether " + file + " left the address space could not be checked";
  if (keep) {
    try {
      version->module.keep_mapped();
    } catch (const Error &error) {
      try {
        if (log) log(LogLevel::warning, std::string("hot swap: ") + error.what());
      } catch (...) {
      }
    }
  }
  // deactivate + destroy under the deadline: one that does not return leaves the version busy
  // for the caller to quarantine. Starting the call may throw (no thread): nothing touched yet.
  Version *raw = version.get();
  std::shared_ptr<PluginCall> stuck;
  call_with_deadline(limit, [raw] {
    raw->instance.reset();
    return std::string();
  }, &stuck);
  if (stuck) {
    version->stuck = std::move(stuck);
    return false;
  }
  // From here nothing throws.
  version.reset();  // the Module: dlclose
  try {
    retired.unloaded = !mapped_in_process(device, inode);
  } catch (...) {
    retired.unloaded = false;
    retired.note = std::move(unchecked_note);
    return true;
  }
  if (keep) {
    retired.note = std::move(kept_note);
  } else if (!retired.unloaded) {
    retired.note = std::move(still_mapped_note);
  }
  return true;
}

}  // namespace kiln::swap_detail
