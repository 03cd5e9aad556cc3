// kiln: choosing and loading device images; KernelLibrary (include/kiln/kernels.hpp).
#include "support/elapsed.hpp"
#include "load/device_images.hpp"

#include <cuda.h>
#include <elf.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>

#include "device/discover.hpp"
#include "device/driver.hpp"

#ifndef EM_CUDA
#define EM_CUDA 190
#endif

namespace kiln {
namespace {

using support::ms_since;

constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;

std::string joined(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) {
    if (!text.empty()) text += ',';
    text += arch.to_string();
  }
  return text;
}

std::string joined(const std::vector<std::string> &names) {
  std::string text;
  for (const auto &name : names) {
    if (!text.empty()) text += ", ";
    text += name;
  }
  return text;
}

std::string device_text(const DeviceIdentity &device) {
  return "device " + std::to_string(device.ordinal) + " (" +
         (device.name.empty() ? std::string("unnamed") : device.name) + ", " + device.arch_name() + ")";
}

std::string set_text(const KernelImages &images) {
  return images.label.empty() ? std::string("device images") : "device images " + images.label;
}

// Overflow-safe "offset + size <= total".
bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

template <class T>
T read_at(const std::string &bytes, std::uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace

// --- DeviceImage ------------------------------------------------------------------------------

std::vector<Arch> DeviceImage::offers() const {
  if (kind == "fatbin") return contains;
  return {arch};
}

std::string DeviceImage::describe() const {
  const std::string size = bytes.empty() ? std::string() : " (" + std::to_string(bytes.size()) + " bytes)";
  if (kind == "fatbin") return "fatbin [" + joined(contains) + "]" + size;
  return arch.to_string() + " " + (kind.empty() ? std::string("image") : kind) + size;
}

// --- choice -----------------------------------------------------------------------------------

ImageChoice choose_image(const std::vector<DeviceImage> &images, const DeviceIdentity &device,
                         int cuda_toolkit_version) {
  ImageChoice choice;
  const auto host = HostRequirements::current();
  ArtifactIdentity artifact;
  artifact.key_schema = host.key_schema;
  artifact.artifact_schema = host.artifact_schema;
  artifact.abi_version = 0;  // device images: no plugin ABI
  artifact.cuda_toolkit_version = cuda_toolkit_version;
  for (const auto &image : images) {
    if (image.kind == "fatbin" && image.contains.empty()) {
      throw UsageError("a fatbin image must list the archs it contains (DeviceImage::contains)");
    }
    for (const auto &arch : image.offers()) {
      if (std::find(artifact.archs.begin(), artifact.archs.end(), arch) == artifact.archs.end()) {
        artifact.archs.push_back(arch);
      }
    }
  }
  if (artifact.archs.empty()) {
    choice.reasons.push_back({"cuda_arch", "", device.arch_name(),
                              "the artifact has no device image; rebuild with --arch " +
                                  device.arch_name()});
    return choice;
  }
  const Compatibility result = check_compatibility(artifact, host, &device);
  if (!result.ok || !result.image) {
    choice.reasons = result.reasons;
    return choice;
  }
  const Arch chosen = *result.image;
  std::optional<std::size_t> fatbin;
  for (std::size_t i = 0; i < images.size(); ++i) {
    const auto &image = images[i];
    if (image.kind != "fatbin" && image.arch == chosen) {
      choice.ok = true;
      choice.index = i;
      choice.arch = chosen;
      choice.how = result.how;
      return choice;
    }
    if (image.kind == "fatbin" && !fatbin) {
      const auto offers = image.offers();
      if (std::find(offers.begin(), offers.end(), chosen) != offers.end()) fatbin = i;
    }
  }
  choice.ok = true;
  choice.index = *fatbin;  // the arch came from some image: a fatbin when no single one
  choice.arch = chosen;
  choice.how = result.how + ", from fatbin [" + joined(images[*fatbin].contains) +
               "] (the driver picks inside it)";
  return choice;
}

namespace load {

// --- validation -------------------------------------------------------------------------------

void validate_image(const DeviceImage &image) {
  const std::string name = image.describe();
  const auto corrupt = [&](const std::string &why) {
    throw IntegrityError("image " + name + " is damaged or not what its label says: " + why +
                         "; rebuild the artifact (kiln refuses it before the driver reads it)");
  };
  const std::string &bytes = image.bytes;
  if (image.kind == "cubin") {
    if (image.arch.kind != Arch::Kind::sass) {
      throw UsageError("image " + name + ": a cubin is SASS, its arch must be sm_XY, not " +
                       image.arch.to_string());
    }
    if (bytes.size() < sizeof(Elf64_Ehdr)) corrupt("shorter than an ELF header");
    if (std::memcmp(bytes.data(), ELFMAG, SELFMAG) != 0) corrupt("no ELF magic (\\x7fELF)");
    if (static_cast<unsigned char>(bytes[EI_CLASS]) != ELFCLASS64) corrupt("not a 64-bit ELF object");
    if (static_cast<unsigned char>(bytes[EI_DATA]) != ELFDATA2LSB) corrupt("not a little-endian ELF object");
    const auto header = read_at<Elf64_Ehdr>(bytes, 0);
    if (header.e_machine != EM_CUDA) {
      corrupt("ELF machine " + std::to_string(header.e_machine) + ", not EM_CUDA (190)");
    }
    const std::uint64_t total = bytes.size();
    if (header.e_shnum > 0) {
      if (header.e_shentsize != sizeof(Elf64_Shdr)) corrupt("unexpected ELF section header size");
      if (!inside(header.e_shoff, std::uint64_t{header.e_shnum} * sizeof(Elf64_Shdr), total)) {
        corrupt("ELF section headers lie past the end (truncated?)");
      }
      if (header.e_shstrndx >= header.e_shnum) corrupt("ELF section name table index out of range");
      for (std::uint64_t i = 0; i < header.e_shnum; ++i) {
        const auto section = read_at<Elf64_Shdr>(bytes, header.e_shoff + i * sizeof(Elf64_Shdr));
        if (section.sh_type != SHT_NOBITS && section.sh_type != SHT_NULL &&
            !inside(section.sh_offset, section.sh_size, total)) {
          corrupt("ELF section " + std::to_string(i) + " lies past the end (truncated?)");
        }
      }
    }
    if (header.e_phnum > 0) {
      if (header.e_phentsize != sizeof(Elf64_Phdr)) corrupt("unexpected ELF program header size");
      if (!inside(header.e_phoff, std::uint64_t{header.e_phnum} * sizeof(Elf64_Phdr), total)) {
        corrupt("ELF program headers lie past the end (truncated?)");
      }
      for (std::uint64_t i = 0; i < header.e_phnum; ++i) {
        const auto segment = read_at<Elf64_Phdr>(bytes, header.e_phoff + i * sizeof(Elf64_Phdr));
        if (!inside(segment.p_offset, segment.p_filesz, total)) {
          corrupt("ELF segment " + std::to_string(i) + " lies past the end (truncated?)");
        }
      }
    }
    if (header.e_shnum == 0) corrupt("ELF object without sections");
    return;
  }
  if (image.kind == "ptx") {
    if (image.arch.kind != Arch::Kind::ptx) {
      throw UsageError("image " + name + ": PTX is for a virtual arch compute_XY, not " +
                       image.arch.to_string());
    }
    if (bytes.empty()) corrupt("empty");
    if (bytes.find('\0') != std::string::npos) corrupt("a NUL byte inside the PTX text");
    if (bytes.find(".version") == std::string::npos || bytes.find(".target") == std::string::npos) {
      corrupt("no .version / .target directive: not PTX");
    }
    return;
  }
  if (image.kind == "fatbin") {
    if (image.contains.empty()) {
      throw UsageError("image " + name + ": a fatbin must list the archs it contains");
    }
    if (bytes.size() < 16) corrupt("shorter than a fatbin header");
    if (read_at<std::uint32_t>(bytes, 0) != kFatbinMagic) corrupt("no fatbin magic (0xBA55ED50)");
    const auto header_size = read_at<std::uint16_t>(bytes, 6);
    const auto fat_size = read_at<std::uint64_t>(bytes, 8);
    if (header_size < 16 || !inside(header_size, fat_size, bytes.size())) {
      corrupt("the fatbin's declared size lies past the end (truncated?)");
    }
    return;
  }
  throw UsageError("image " + name + ": unknown kind \"" + image.kind +
                   "\" (expected cubin, ptx or fatbin)");
}

}  // namespace load

// --- KernelLibrary ----------------------------------------------------------------------------

struct KernelLibrary::State {
  device::Driver *driver = nullptr;
  DeviceIdentity device;
  CUdevice cu_device = 0;
  CUcontext context = nullptr;
  bool retained = false;
  CUlibrary library = nullptr;
  DeviceImage image;  // the chosen image without its bytes (the driver keeps its own copy)
  std::string image_text;  // its describe(), with the size it had
  ImageChoice choice;
  std::string label;
  std::vector<std::string> names;
  std::vector<std::string> expressions;  // parallel to names, or empty
  std::vector<CUkernel> kernels;
  std::vector<CUfunction> functions;
  double load_ms = 0;
  double resolve_ms = 0;
  std::vector<char> jit_log;  // PTX JIT error log; the driver may write it until unload
  // While loading: the thread's context before ours, put back if the load fails.
  CUcontext previous = nullptr;
  bool restore_previous = false;

  decltype(&::cuLibraryUnload) library_unload = nullptr;
  decltype(&::cuDevicePrimaryCtxRelease) primary_release = nullptr;
  decltype(&::cuCtxGetCurrent) ctx_get_current = nullptr;
  decltype(&::cuCtxSetCurrent) ctx_set_current = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;

  State() = default;
  State(const State &) = delete;
  State &operator=(const State &) = delete;
  ~State() {
    if (library != nullptr && library_unload != nullptr) library_unload(library);
    if (restore_previous && ctx_set_current != nullptr) ctx_set_current(previous);
    if (retained && primary_release != nullptr) primary_release(cu_device);
  }

  std::size_t find(std::string_view name) const {
    for (std::size_t i = 0; i < names.size(); ++i) {
      if (names[i] == name) return i;
    }
    for (std::size_t i = 0; i < expressions.size(); ++i) {
      if (expressions[i] == name) return i;
    }
    throw NotFoundError("kernel \"" + std::string(name) + "\" is not among the kernels loaded from " +
                        (label.empty() ? std::string("these device images") : label) + " on " +
                        device_text(device) + " (" + joined(names) + ")");
  }
};

KernelLibrary KernelLibraryAccess::make(std::unique_ptr<KernelLibrary::State> state) {
  return KernelLibrary(std::move(state));
}

KernelLibrary::KernelLibrary(std::unique_ptr<State> state) : state_(std::move(state)) {}
KernelLibrary::KernelLibrary(KernelLibrary &&) noexcept = default;
KernelLibrary &KernelLibrary::operator=(KernelLibrary &&) noexcept = default;
KernelLibrary::~KernelLibrary() = default;

int KernelLibrary::device_ordinal() const noexcept { return state_->device.ordinal; }
const DeviceIdentity &KernelLibrary::device() const noexcept { return state_->device; }
const DeviceImage &KernelLibrary::image() const noexcept { return state_->image; }
const ImageChoice &KernelLibrary::choice() const noexcept { return state_->choice; }
const std::vector<std::string> &KernelLibrary::kernel_names() const noexcept { return state_->names; }
double KernelLibrary::load_ms() const noexcept { return state_->load_ms; }
double KernelLibrary::resolve_ms() const noexcept { return state_->resolve_ms; }
CUcontext KernelLibrary::context() const noexcept { return state_->context; }
CUlibrary KernelLibrary::handle() const noexcept { return state_->library; }

CUkernel KernelLibrary::kernel(std::string_view name) const {
  return state_->kernels[state_->find(name)];
}

CUfunction KernelLibrary::function(std::string_view name) const {
  return state_->functions[state_->find(name)];
}

void KernelLibrary::launch(std::string_view name, Dim3 grid, Dim3 block, unsigned shared_bytes,
                           CUstream stream, void **args) const {
  const State &s = *state_;
  const CUfunction function = s.functions[s.find(name)];
  CUcontext current = nullptr;
  CUresult result = s.ctx_get_current(&current);
  if (result == CUDA_SUCCESS && current != s.context) result = s.ctx_set_current(s.context);
  if (result == CUDA_SUCCESS) {
    result = s.launch_kernel(function, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                             shared_bytes, stream, args, nullptr);
  }
  if (result != CUDA_SUCCESS) {
    throw Error(ErrorKind::other, "launching kernel \"" + std::string(name) + "\" on " +
                                      device_text(s.device) + " failed: " +
                                      s.driver->error_text(result));
  }
}

const KernelLibrary *DeviceKernels::on(int ordinal) const noexcept {
  for (const auto &library : libraries) {
    if (library.device_ordinal() == ordinal) return &library;
  }
  return nullptr;
}

// --- loading ----------------------------------------------------------------------------------

namespace load {
namespace {

// A failed driver call while loading or resolving: the typed error DESIGN §2 step 3 asks for.
[[noreturn]] void refuse(const KernelLibrary::State &s, const std::string &what, CUresult result,
                         int toolkit_version) {
  std::string error = s.driver->error_text(result);
  const std::string log = s.jit_log.empty() ? std::string()
                                            : std::string(s.jit_log.data(), ::strnlen(s.jit_log.data(), s.jit_log.size()));
  if (!log.empty()) error += "; JIT log: " + log;
  const std::string &image = s.image_text;
  switch (static_cast<int>(result)) {
    case 209:  // CUDA_ERROR_NO_BINARY_FOR_GPU
      throw IncompatibleError(
          what, {{"cuda_arch", s.image.kind == "fatbin" ? joined(s.image.contains) : s.image.arch.to_string(),
                  s.device.arch_name(),
                  "the driver finds no code for this GPU in image " + image + ": " + error +
                      "; the image is mislabelled or damaged; rebuild the artifact"}});
    case 222:  // CUDA_ERROR_UNSUPPORTED_PTX_VERSION
      throw IncompatibleError(
          what, {{"driver_version", toolkit_version > 0 ? std::to_string(toolkit_version) : "unknown",
                  std::to_string(s.device.driver_version),
                  "the driver refuses image " + image + " as written by a newer CUDA than itself: " +
                      error + "; update the driver" +
                      (s.image.kind == "ptx" ? ", or ship SASS for " + s.device.arch_name()
                                             : ", or rebuild with a toolkit no newer than the driver")}});
    case 200:  // CUDA_ERROR_INVALID_IMAGE
    case 218:  // CUDA_ERROR_INVALID_PTX
    case 300:  // CUDA_ERROR_INVALID_SOURCE
      throw IntegrityError(what + ": the driver finds image " + image + " invalid: " + error +
                           "; the image is damaged or not what its label says; rebuild the artifact");
    case 500:  // CUDA_ERROR_NOT_FOUND
      throw NotFoundError(what + ": image " + image + " has no such kernel: " + error +
                          "; list kernels by the name the driver knows (extern \"C\" names, or "
                          "the lowered names the JIT build records)");
    default:
      throw Error(ErrorKind::other, what + " (image " + image + "): " + error);
  }
}

template <class Fn>
Fn need(device::Driver &driver, const char *name) {
  auto fn = driver.proc_as<Fn>(name);
  if (fn == nullptr) {
    throw Error(ErrorKind::other,
                "the CUDA driver " + device::driver_version_text(driver.driver_version()) + " (" +
                    driver.library() + ") offers no " + name +
                    ": loading device images needs a CUDA 12.0 or newer driver; update the NVIDIA driver");
  }
  return fn;
}

}  // namespace

KernelLibrary load_kernels(device::Driver &driver, const KernelImages &images, int device_ordinal) {
  const std::string set = set_text(images);
  if (images.images.empty()) throw UsageError(set + ": no image to load");
  if (!driver.ok()) {
    throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  }
  if (device_ordinal < 0 || device_ordinal >= driver.device_count()) {
    throw UsageError("cannot load " + set + " on device " + std::to_string(device_ordinal) +
                     ": the driver sees " + std::to_string(driver.device_count()) +
                     (driver.device_count() == 1 ? " device" : " devices") + " (ordinals from 0)");
  }
  const DeviceReport report = device::discover(driver, std::nullopt);
  if (report.state != DriverState::ok || static_cast<std::size_t>(device_ordinal) >= report.devices.size()) {
    throw Error(ErrorKind::other, "cannot load " + set + ": " + report.detail);
  }
  const DeviceIdentity &device = report.devices[static_cast<std::size_t>(device_ordinal)];

  // 1. Which image (pure), and are its bytes what it says (pure).
  ImageChoice choice = choose_image(images.images, device, images.cuda_toolkit_version);
  if (!choice.ok) {
    std::string offered;
    for (const auto &image : images.images) offered += (offered.empty() ? "" : ", ") + image.describe();
    throw IncompatibleError(set + " [" + offered + "] cannot run on " + device_text(device),
                            choice.reasons);
  }
  validate_image(images.images[choice.index]);
  return load_chosen(driver, images, device, choice);
}

KernelLibrary load_chosen(device::Driver &driver, const KernelImages &images, const DeviceIdentity &device,
                          const ImageChoice &choice) {
  const std::string set = set_text(images);
  if (!driver.ok()) throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  const int device_ordinal = device.ordinal;
  const DeviceImage &chosen = images.images.at(choice.index);

  // 2. The driver entry points (all through cuGetProcAddress).
  auto state = std::make_unique<KernelLibrary::State>();
  KernelLibrary::State &s = *state;
  s.driver = &driver;
  s.device = device;
  s.choice = choice;
  s.label = images.label;
  s.image.kind = chosen.kind;
  s.image.arch = chosen.arch;
  s.image.contains = chosen.contains;
  s.image_text = chosen.describe();
  s.library_unload = need<decltype(&::cuLibraryUnload)>(driver, "cuLibraryUnload");
  s.primary_release = need<decltype(&::cuDevicePrimaryCtxRelease)>(driver, "cuDevicePrimaryCtxRelease");
  s.ctx_get_current = need<decltype(&::cuCtxGetCurrent)>(driver, "cuCtxGetCurrent");
  s.ctx_set_current = need<decltype(&::cuCtxSetCurrent)>(driver, "cuCtxSetCurrent");
  s.launch_kernel = need<decltype(&::cuLaunchKernel)>(driver, "cuLaunchKernel");
  const auto primary_retain = need<decltype(&::cuDevicePrimaryCtxRetain)>(driver, "cuDevicePrimaryCtxRetain");
  const auto library_load = need<decltype(&::cuLibraryLoadData)>(driver, "cuLibraryLoadData");
  const auto get_kernel = need<decltype(&::cuLibraryGetKernel)>(driver, "cuLibraryGetKernel");
  const auto get_function = need<decltype(&::cuKernelGetFunction)>(driver, "cuKernelGetFunction");
  const auto func_load = driver.proc_as<decltype(&::cuFuncLoad)>("cuFuncLoad");  // 12.4+, optional

  const std::string on = " on " + device_text(device);
  const std::string image_text = "image " + chosen.describe() + " of " + set;

  // 3. The device's primary context, current on this thread.
  CUresult result = driver.api().device_get(&s.cu_device, device_ordinal);
  if (result != CUDA_SUCCESS) refuse(s, "cuDeviceGet(" + std::to_string(device_ordinal) + ")", result, 0);
  result = primary_retain(&s.context, s.cu_device);
  if (result != CUDA_SUCCESS) refuse(s, "retaining the primary context of " + device_text(device), result, 0);
  s.retained = true;
  if (s.ctx_get_current(&s.previous) == CUDA_SUCCESS) s.restore_previous = true;
  result = s.ctx_set_current(s.context);
  if (result != CUDA_SUCCESS) refuse(s, "making the primary context of " + device_text(device) + " current", result, 0);

  // 4. Load. The driver accepts wrong-arch, too-new and damaged images here; step 5 finds out.
  // A PTX JIT error log only where the driver may JIT (PTX, or a fatbin that may hold PTX).
  const unsigned jit_option_count = chosen.kind == "cubin" ? 0 : 2;
  if (jit_option_count != 0) s.jit_log.assign(4096, '\0');
  CUjit_option jit_options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *jit_values[] = {s.jit_log.data(), reinterpret_cast<void *>(static_cast<std::uintptr_t>(s.jit_log.size()))};
  const auto load_started = std::chrono::steady_clock::now();
  result = library_load(&s.library, chosen.bytes.c_str(), jit_option_count != 0 ? jit_options : nullptr,
                        jit_option_count != 0 ? jit_values : nullptr, jit_option_count, nullptr, nullptr, 0);
  s.load_ms = ms_since(load_started);
  if (result != CUDA_SUCCESS) {
    s.library = nullptr;
    refuse(s, "loading " + image_text + " (kernels: " + joined(images.kernels) + ")" + on, result,
           images.cuda_toolkit_version);
  }

  // 5. Resolve every kernel now, in this device's context, and finish loading each.
  const auto resolve_started = std::chrono::steady_clock::now();
  s.names = images.kernels;
  if (images.name_expressions.size() == images.kernels.size()) s.expressions = images.name_expressions;
  if (s.names.empty()) {
    const auto count_kernels = driver.proc_as<decltype(&::cuLibraryGetKernelCount)>("cuLibraryGetKernelCount");
    const auto enumerate = driver.proc_as<decltype(&::cuLibraryEnumerateKernels)>("cuLibraryEnumerateKernels");
    const auto kernel_name = driver.proc_as<decltype(&::cuKernelGetName)>("cuKernelGetName");
    if (count_kernels == nullptr || enumerate == nullptr || kernel_name == nullptr) {
      throw UsageError(set + " lists no kernels and this driver cannot enumerate them (needs CUDA "
                             "12.4+); list the kernels to resolve");
    }
    unsigned count = 0;
    result = count_kernels(&count, s.library);
    if (result != CUDA_SUCCESS) refuse(s, "counting the kernels of " + image_text + on, result, images.cuda_toolkit_version);
    std::vector<CUkernel> all(count);
    if (count > 0) {
      result = enumerate(all.data(), count, s.library);
      if (result != CUDA_SUCCESS) refuse(s, "enumerating the kernels of " + image_text + on, result, images.cuda_toolkit_version);
    }
    for (CUkernel kernel : all) {
      const char *name = nullptr;
      result = kernel_name(&name, kernel);
      if (result != CUDA_SUCCESS || name == nullptr) {
        refuse(s, "naming a kernel of " + image_text + on, result, images.cuda_toolkit_version);
      }
      s.names.emplace_back(name);
    }
    if (s.names.empty()) throw UsageError(set + ": image " + chosen.describe() + " holds no kernel");
  }
  for (const auto &name : s.names) {
    const std::string what = "kernel \"" + name + "\" of " + image_text + on;
    CUkernel kernel = nullptr;
    result = get_kernel(&kernel, s.library, name.c_str());
    if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    CUfunction function = nullptr;
    result = get_function(&function, kernel);
    if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    if (func_load != nullptr) {
      result = func_load(function);
      if (result != CUDA_SUCCESS) refuse(s, what, result, images.cuda_toolkit_version);
    }
    s.kernels.push_back(kernel);
    s.functions.push_back(function);
  }
  s.resolve_ms = ms_since(resolve_started);
  s.restore_previous = false;  // loaded: the device's primary context stays current
  return KernelLibraryAccess::make(std::move(state));
}

DeviceKernels load_for_devices(device::Driver &driver, const KernelImages &images,
                               const DeviceLoadOptions &options) {
  const std::string set = set_text(images);
  if (!driver.ok()) throw Error(ErrorKind::other, "cannot load " + set + ": " + driver.detail());
  std::vector<int> ordinals;
  if (options.device_ordinal) {
    ordinals.push_back(*options.device_ordinal);
  } else {
    for (int i = 0; i < driver.device_count(); ++i) ordinals.push_back(i);
  }
  DeviceKernels out;
  for (int ordinal : ordinals) {
    try {
      out.libraries.push_back(load_kernels(driver, images, ordinal));
    } catch (const Error &error) {
      if (!options.skip_unusable || error.kind() == ErrorKind::usage) throw;
      SkippedDevice skipped;
      skipped.ordinal = ordinal;
      const DeviceReport report = device::discover(driver, std::nullopt);
      if (static_cast<std::size_t>(ordinal) < report.devices.size()) {
        skipped.device = device_text(report.devices[static_cast<std::size_t>(ordinal)]);
      } else {
        skipped.device = "device " + std::to_string(ordinal);
      }
      skipped.why = error.what();
      skipped.kind = error.kind();
      out.skipped.push_back(std::move(skipped));
    }
  }
  if (out.libraries.empty() && !out.skipped.empty()) {
    std::string why;
    for (const auto &skipped : out.skipped) why += (why.empty() ? "" : "; ") + skipped.why;
    throw Error(out.skipped.front().kind, "no device can load " + set + ": " + why);
  }
  return out;
}

}  // namespace load

KernelLibrary load_kernels(const KernelImages &images, int device_ordinal) {
  return load::load_kernels(device::Driver::instance(), images, device_ordinal);
}

DeviceKernels load_for_devices(const KernelImages &images, const DeviceLoadOptions &options) {
  return load::load_for_devices(device::Driver::instance(), images, options);
}

}  // namespace kiln
