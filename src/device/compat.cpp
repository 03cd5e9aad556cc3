// kiln: docs/architecture.md §5, the compatibility rule, as a pure function.
#include <optional>
#include <string>
#include <vector>

#include <kiln/identity.hpp>
#include <kiln/version.hpp>

namespace kiln {
namespace {

std::string cc_text(int major, int minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string cuda_text(int version) {
  return std::to_string(version / 1000) + "." + std::to_string((version % 1000) / 10);
}

// Preference classes, best first (docs/architecture.md §5 and the check's contract).
enum Rank : int {
  kSassArchSpecific = 60,  // sm_XYa on exactly X.Y
  kSassExact = 50,         // sm_XY on exactly X.Y
  kSassFamily = 40,        // sm_XYf on X.Z, Z >= Y
  kSassLowerMinor = 30,    // sm_XY on X.Z, Z > Y (desktop only)
  kPtxArchSpecific = 20,   // compute_XYa on exactly X.Y
  kPtxFamily = 15,         // compute_XYf on X.Z, Z >= Y
  kPtx = 10,               // compute_XY on any CC >= XY
};

struct Candidate {
  Arch arch;
  int rank = 0;
  int tiebreak = 0;  // within a class: nearer (higher) minor / higher PTX CC wins
};

// Whether `arch` runs on `device`; sets *ptx_too_new when only the driver's age stops a PTX.
// No text: only the winner is described (fit_text), so a warm load builds one string, not
// three per arch.
std::optional<Candidate> fit(const Arch &arch, const DeviceIdentity &device, int toolkit,
                             bool *ptx_too_new) {
  const bool same_major = arch.major == device.cc_major;
  const bool exact = same_major && arch.minor == device.cc_minor;
  if (arch.kind == Arch::Kind::sass) {
    if (arch.suffix == 'a') {
      if (exact) return Candidate{arch, kSassArchSpecific, 0};
      return std::nullopt;
    }
    if (arch.suffix == 'f') {
      if (!same_major || device.cc_minor < arch.minor) return std::nullopt;
      return Candidate{arch, kSassFamily, arch.minor};
    }
    if (exact) return Candidate{arch, kSassExact, 0};
    // Integrated (Tegra) GPUs get no cross-minor SASS compatibility.
    if (same_major && arch.minor < device.cc_minor && !device.integrated) {
      return Candidate{arch, kSassLowerMinor, arch.minor};
    }
    return std::nullopt;
  }

  int rank = kPtx;
  if (arch.suffix == 'a') {
    if (!exact) return std::nullopt;
    rank = kPtxArchSpecific;
  } else if (arch.suffix == 'f') {
    if (!same_major || device.cc_minor < arch.minor) return std::nullopt;
    rank = kPtxFamily;
  } else if (arch.cc() > device.cc_major * 10 + device.cc_minor) {
    return std::nullopt;
  }
  // A driver older than the toolkit that wrote the PTX refuses it (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).
  if (toolkit > 0 && device.driver_version > 0 && device.driver_version < toolkit) {
    *ptx_too_new = true;
    return std::nullopt;
  }
  return Candidate{arch, rank, arch.cc()};
}

// Compatibility::how for the chosen candidate.
std::string fit_text(const Candidate &chosen, const DeviceIdentity &device) {
  const Arch &arch = chosen.arch;
  const std::string name = arch.to_string();
  switch (chosen.rank) {
    case kSassArchSpecific: return "exact SASS " + name + " (arch-specific)";
    case kSassExact: return "exact SASS " + name;
    case kSassFamily:
      return "SASS " + name + " runs on " + cc_text(device.cc_major, device.cc_minor) + " (same family " +
             std::to_string(arch.major) + ".x, minor " + std::to_string(device.cc_minor) +
             " >= " + std::to_string(arch.minor) + ")";
    case kSassLowerMinor:
      return "SASS " + name + " runs on " + cc_text(device.cc_major, device.cc_minor) +
             " (same major, lower minor)";
    default:
      return "PTX " + name + ", JIT-compiled by the driver (no SASS for " +
             cc_text(device.cc_major, device.cc_minor) + ")";
  }
}

std::string joined(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) {
    if (!text.empty()) text += ',';
    text += arch.to_string();
  }
  return text;
}

}  // namespace

Compatibility check_compatibility(const ArtifactIdentity &artifact, const HostRequirements &host,
                                  const DeviceIdentity *device) {
  Compatibility result;
  auto &reasons = result.reasons;

  if (artifact.key_schema != host.key_schema) {
    reasons.push_back({"key_schema", std::to_string(artifact.key_schema),
                       std::to_string(host.key_schema),
                       "the key computation changed; rebuild the artifact with this kiln"});
  }
  if (artifact.artifact_schema != host.artifact_schema) {
    reasons.push_back({"artifact_schema", std::to_string(artifact.artifact_schema),
                       std::to_string(host.artifact_schema),
                       "the store entry layout changed; rebuild the artifact with this kiln"});
  }
  // abi_version 0: a device-image artifact, no plugin ABI to agree on.
  if (artifact.abi_version != 0) {
    const auto major = KILN_ABI_VERSION_MAJOR_OF(artifact.abi_version);
    const auto minor = KILN_ABI_VERSION_MINOR_OF(artifact.abi_version);
    if (major != KILN_ABI_VERSION_MAJOR_OF(host.abi_version)) {
      reasons.push_back({"abi_version", abi_version_text(artifact.abi_version), abi_version_text(host.abi_version),
                         "plugin ABI major differs from this kiln's; rebuild the plugin against "
                         "this kiln's abi/ headers"});
    } else if (minor < KILN_ABI_VERSION_MINOR_OF(host.abi_required)) {
      reasons.push_back({"abi_version", abi_version_text(artifact.abi_version), abi_version_text(host.abi_version),
                         "this kiln requires plugin ABI " + abi_version_text(host.abi_required) +
                             " or newer; rebuild the plugin against this kiln's abi/ headers"});
    }
  }

  std::optional<Candidate> best;
  if (artifact.archs.empty()) {
    result.how = device != nullptr ? "host-only code: no device image needed"
                                   : "host-only code: no device image";
  } else if (device == nullptr) {
    result.how = "device code not checked: no device given";
  } else {
    bool ptx_too_new = false;
    const Arch *blocked_ptx = nullptr;
    for (const auto &arch : artifact.archs) {
      bool too_new = false;
      auto candidate = fit(arch, *device, artifact.cuda_toolkit_version, &too_new);
      if (too_new && blocked_ptx == nullptr) blocked_ptx = &arch;
      ptx_too_new = ptx_too_new || too_new;
      if (candidate && (!best || candidate->rank > best->rank ||
                        (candidate->rank == best->rank && candidate->tiebreak > best->tiebreak))) {
        best = candidate;
      }
    }
    if (best) {
      result.how = fit_text(*best, *device);
    } else if (ptx_too_new) {
      // Only the driver's age stands in the way: say so rather than blame the arch list.
      reasons.push_back(
          {"driver_version", std::to_string(artifact.cuda_toolkit_version),
           std::to_string(device->driver_version),
           "PTX " + blocked_ptx->to_string() + " was written by CUDA " +
               cuda_text(artifact.cuda_toolkit_version) + " and the driver is CUDA " +
               cuda_text(device->driver_version) +
               ": it would fail with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222); update the driver "
               "or rebuild with --arch " + device->arch_name()});
    } else {
      const std::string rule =
          device->integrated
              ? " (an integrated GPU: SASS must be built for exactly " + device->arch_name() +
                    "); PTX needs compute_XY with XY <= " + std::to_string(device->cc_major) +
                    std::to_string(device->cc_minor)
              : ": SASS needs the same major and a minor <= " + std::to_string(device->cc_minor) +
                    ", sm_XYa the exact arch, sm_XYf the same major; PTX needs compute_XY with "
                    "XY <= " + std::to_string(device->cc_major) + std::to_string(device->cc_minor);
      const std::string here = cc_text(device->cc_major, device->cc_minor);
      reasons.push_back({"cuda_arch", joined(artifact.archs), device->arch_name(),
                         "no image runs on compute capability " + here + rule +
                             "; rebuild with --arch " + device->arch_name() + " or add PTX"});
    }
  }

  result.ok = reasons.empty();
  if (result.ok) {
    if (best) result.image = best->arch;
  } else {
    result.how.clear();
  }
  return result;
}

}  // namespace kiln
