// Runtime: loading device-image artifacts (kind "images") -- resolve -> check -> verify ->
// cuLibraryLoadData -> resolve every kernel (docs/architecture.md §2.2).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <map>

#include <boost/filesystem/path.hpp>

#include <kiln/kernels.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "support/elapsed.hpp"
#include "device/driver.hpp"
#include "load/device_images.hpp"
#include "runtime/state.hpp"
#include "files/digest.hpp"
#include "files/file_identity.hpp"
#include "files/safety.hpp"
#include "files/unique_fd.hpp"
#include "support/typed_errors.hpp"

namespace kiln {
namespace {

using support::ms_since;

namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

// The image file, read once through one descriptor: store safety, size and digest are checked
// on exactly the bytes the driver then gets (no check-then-swap window), then their structure.
DeviceImage read_verified(const Resolution &resolution, const ArtifactImage &record, files::FileIdentity *read_id) {
  const std::string what = resolution.consumer + "/" + resolution.name;
  const fs::path file = fs::path(resolution.entry_dir) / record.file;
  // O_NOFOLLOW: a symlink planted in an entry is refused, never followed. O_NONBLOCK: a FIFO in
  // its place must not hang the host (its size then differs from the record's).
  files::UniqueFd fd(::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == ENOENT) {
      throw IntegrityError("device image " + file.string() + " of " + what +
                           " is missing from its store entry: the entry was damaged; rebuild or republish it");
    }
    if (error == ELOOP) {
      throw IntegrityError("refusing to load " + file.string() +
                           ": it is a symlink (store entries hold regular files only); rebuild or republish " + what);
    }
    throw IoError("cannot open device image " + file.string() + ": " + std::strerror(error));
  }
  files::check_safe_to_execute(fd.get(), file, resolution.store_root);
  struct stat status {};
  if (::fstat(fd.get(), &status) != 0) throw IoError("cannot stat " + file.string() + ": " + std::strerror(errno));
  *read_id = files::identity_of(status);
  if (static_cast<std::uint64_t>(status.st_size) != record.size) {
    throw IntegrityError("device image " + file.string() + " of " + what + " is " + std::to_string(status.st_size) +
                         " bytes, but " + std::to_string(record.size) + " were recorded: it is torn or was altered, "
                         "and was not loaded; rebuild or republish " + what);
  }
  DeviceImage image;
  image.kind = record.kind;
  image.arch = record.arch;
  image.contains = record.contains;
  image.bytes.resize(record.size);
  std::size_t done = 0;
  while (done < image.bytes.size()) {
    const ssize_t got = ::read(fd.get(), &image.bytes[done], image.bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw IoError("cannot read " + file.string() + ": " + std::strerror(errno));
    if (got == 0) {
      throw IntegrityError("device image " + file.string() + " of " + what + " ended after " + std::to_string(done) +
                           " of " + std::to_string(record.size) + " bytes while being read: it was truncated; rebuild "
                           "or republish " + what);
    }
    done += static_cast<std::size_t>(got);
  }
  const std::string actual = files::digest_hex(image.bytes);
  if (actual != record.digest) {
    throw IntegrityError("device image " + file.string() + " of " + what + " does not match its recorded digest "
                         "(recorded " + record.digest + ", file " + actual + "): it is torn or was altered, and was "
                         "not loaded; rebuild or republish " + what);
  }
  load::validate_image(image);  // IntegrityError when the bytes are not what the label says
  return image;
}

}  // namespace

std::shared_ptr<const KernelImages> Runtime::State::verified_image(const Resolution &r, std::size_t index) const {
  const ArtifactImage &record = r.images.at(index);
  std::string file = r.entry_dir;
  file += '/';
  file += record.file;
  const auto missing = [&] {
    return IntegrityError("device image " + file + " of " + r.consumer + "/" + r.name +
                          " is missing from its store entry: the entry was damaged; rebuild or republish it");
  };
  // Warm: bytes read and verified from this very file (same device, inode, size, mtime, ctime)
  // are handed to the driver again; the file itself must still be safe. The directory walk is
  // for reading: it runs (in read_verified) whenever bytes come from the disk, and a change to
  // a directory cannot change bytes already held.
  files::FileIdentity seen;
  try {
    files::check_file_safe(file, &seen);
  } catch (const NotFoundError &) {
    throw missing();
  }
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    const auto hit = images.find(file);
    if (hit != images.end() && hit->second.id == seen) return hit->second.images;
  }
  // Cold: read_verified checks the file on its descriptor and every directory up to the store
  // root, then reads, digests and validates exactly the bytes kept.
  files::FileIdentity read_id;
  auto set = std::make_shared<KernelImages>();
  set->images.push_back(read_verified(r, record, &read_id));
  set->label = r.consumer + "/" + r.name;
  set->cuda_toolkit_version = r.identity.cuda_toolkit_version;
  for (const auto &kernel : r.kernels) {
    set->kernels.push_back(kernel.lowered_name);
    set->name_expressions.push_back(kernel.name);
  }
  const std::uint64_t size = set->images.front().bytes.size();
  std::lock_guard<std::mutex> lock(cache_mutex);
  if (const auto old = images.find(file); old != images.end()) {
    image_bytes -= old->second.images->images.front().bytes.size();
    images.erase(old);
  }
  if (image_bytes + size > kImageCacheBytes) {
    images.clear();
    image_bytes = 0;
  }
  if (size <= kImageCacheBytes) {
    images[file] = {read_id, set};
    image_bytes += size;
  }
  return set;
}

DeviceKernels Runtime::State::load_images(const Resolution &r, const DeviceLoadOptions &load,
                                          KernelLoadReport *report, double resolve_ms) const {
  const std::string &consumer = r.consumer;
  if (r.kind != kKindImages) {
    throw UsageError(consumer + "/" + r.name + " is a \"" + r.kind + "\" artifact, not device images: load it with "
                     "Runtime::load (kiln load binds a plugin)");
  }
  KernelLoadTimings timings;
  timings.resolve_ms = resolve_ms;
  const std::vector<DeviceIdentity> &effective = checked_devices();  // discovery (once) is not timed

  auto start = Clock::now();
  const Compatibility host = check_compatibility(r.identity, HostRequirements::current(), nullptr);
  if (!host.ok) throw IncompatibleError("artifact " + consumer + "/" + r.name + " (" + r.content_key + ")", host.reasons);
  if (r.images.empty()) {
    throw IntegrityError("store entry " + r.entry_dir + " of " + consumer + "/" + r.name +
                         " lists no device image; rebuild or republish it");
  }
  std::vector<DeviceImage> offered;  // what choose_image needs: kinds and archs, no bytes
  offered.reserve(r.images.size());
  for (const auto &image : r.images) {
    DeviceImage each;
    each.kind = image.kind;
    each.arch = image.arch;
    each.contains = image.contains;
    offered.push_back(std::move(each));
  }
  if (effective.empty()) {
    throw Error(ErrorKind::other, "cannot load device images " + consumer + "/" + r.name + ": no CUDA device (" +
                                      devices().detail + ")");
  }
  int first = 0, last = static_cast<int>(effective.size()) - 1;
  if (load.device_ordinal) first = last = *load.device_ordinal;
  timings.check_ms += ms_since(start);

  std::vector<ImageLoad> loads;
  const auto load_one = [&](int ordinal) {
    // Check: the image this device runs, and why.
    start = Clock::now();
    if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= effective.size()) {
      throw NotFoundError("device " + std::to_string(ordinal) + " does not exist: " + std::to_string(effective.size()) +
                          " device(s) present (" + devices().detail + ")");
    }
    const DeviceIdentity &checked_device = effective[static_cast<std::size_t>(ordinal)];
    ImageChoice choice = choose_image(offered, checked_device, r.identity.cuda_toolkit_version);
    if (!choice.ok) {
      std::string listed;
      for (const auto &image : offered) listed += (listed.empty() ? "" : ", ") + image.describe();
      throw IncompatibleError("artifact " + consumer + "/" + r.name + " (" + r.content_key + ") [" + listed + "] on " +
                                  checked_device.label(),
                              choice.reasons);
    }
    timings.check_ms += ms_since(start);

    // Verify: store safety, and the chosen image's bytes (read and digested once per file
    // identity; see State::images).
    start = Clock::now();
    const std::shared_ptr<const KernelImages> set = verified_image(r, choice.index);
    timings.verify_ms += ms_since(start);

    // Load on the live device of that ordinal and resolve every kernel.
    device::Driver &driver = device::Driver::instance();
    if (!driver.ok()) {
      throw Error(ErrorKind::other, "cannot load device images " + consumer + "/" + r.name + " (image " +
                                        r.images[choice.index].file + " verified): " + driver.detail());
    }
    const DeviceReport &live = devices();
    if (static_cast<std::size_t>(ordinal) >= live.devices.size()) {
      throw NotFoundError("cannot load device images " + consumer + "/" + r.name + " on device " +
                          std::to_string(ordinal) + ": the driver sees " + std::to_string(live.devices.size()) +
                          " device(s) (" + live.detail + ")");
    }
    const std::size_t chosen = choice.index;
    choice.index = 0;  // the set holds that image alone
    KernelLibrary library = load::load_chosen(driver, *set, live.devices[static_cast<std::size_t>(ordinal)], choice);
    timings.load_ms += library.load_ms();
    timings.kernels_ms += library.resolve_ms();
    if (report != nullptr) {
      choice.index = chosen;
      loads.push_back({library.device(), r.images[chosen], std::move(choice)});
    }
    return library;
  };
  std::vector<int> ordinals;
  for (int ordinal = first; ordinal <= last; ++ordinal) ordinals.push_back(ordinal);
  DeviceKernels out = load::load_on_each(
      ordinals, load.skip_unusable, "device images " + consumer + "/" + r.name, load_one, [&](int ordinal) {
        return ordinal >= 0 && static_cast<std::size_t>(ordinal) < effective.size()
                   ? effective[static_cast<std::size_t>(ordinal)].label()
                   : "device " + std::to_string(ordinal);
      });
  if (report != nullptr) {
    report->resolution = r;
    report->loads = std::move(loads);
    report->skipped = out.skipped;
    report->timings = timings;
  }
  note_use(r);
  return out;
}

KernelLibrary Runtime::State::load_images_on(const std::string &consumer, const std::string &name, int device) const {
  const auto start = Clock::now();
  const std::shared_ptr<const Resolution> resolution = storage->resolve(consumer, name);
  DeviceLoadOptions one;
  one.device_ordinal = device;
  DeviceKernels loaded = load_images(*resolution, one, nullptr, ms_since(start));
  return std::move(loaded.libraries.front());
}

KernelLibrary Runtime::load_kernels(const std::string &consumer, const std::string &name, int device,
                                    KernelLoadReport *report) const try {
  const auto start = Clock::now();
  const std::shared_ptr<const Resolution> resolution = state_->storage->resolve(consumer, name);
  DeviceLoadOptions options;
  options.device_ordinal = device < 0 ? 0 : device;
  DeviceKernels loaded = state_->load_images(*resolution, options, report, ms_since(start));
  return std::move(loaded.libraries.front());
} catch (...) {
  support::rethrow_typed("loading the kernels of " + consumer + "/" + name);
}

DeviceKernels Runtime::load_kernels_all(const std::string &consumer, const std::string &name) const {
  return load_kernels_all(consumer, name, DeviceLoadOptions{});
}

KernelLibrary Runtime::ensure_kernels(const Recipe &recipe) { return ensure_kernels(recipe, BuildOptions{}); }

DeviceKernels Runtime::load_kernels_all(const std::string &consumer, const std::string &name,
                                        const DeviceLoadOptions &options, KernelLoadReport *report) const try {
  const auto start = Clock::now();
  const std::shared_ptr<const Resolution> resolution = state_->storage->resolve(consumer, name);
  return state_->load_images(*resolution, options, report, ms_since(start));
} catch (...) {
  support::rethrow_typed("loading the kernels of " + consumer + "/" + name);
}

KernelLibrary Runtime::ensure_kernels(const Recipe &recipe, const BuildOptions &build_options, int device,
                                      KernelLoadReport *report) try {
  if (recipe.builds_plugin()) {
    throw UsageError("recipe " + recipe.file + " builds a plugin (backend " + recipe.backend +
                     "), not device images: use Runtime::ensure");
  }
  const auto start = Clock::now();
  DeviceLoadOptions options;
  options.device_ordinal = device < 0 ? 0 : device;
  bool prepared = false;
  const Resolution resolution = built_or_prepared(recipe, build_options, &prepared);
  return std::move(state_->load_images(resolution, options, report, prepared ? 0 : ms_since(start)).libraries.front());
} catch (...) {
  support::rethrow_typed("ensuring " + recipe.consumer + "/" + recipe.name + " (recipe " + recipe.file + ")");
}

}  // namespace kiln
