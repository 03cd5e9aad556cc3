#include "artifact/arch_claims.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include <kiln/errors.hpp>

#include "artifact/fatbin.hpp"

namespace kiln::artifact {
namespace {

bool holds(const std::vector<Arch> &archs, const Arch &arch) {
  return std::find(archs.begin(), archs.end(), arch) != archs.end();
}

std::string listed_text(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

// The compute capabilities (90 for "900") the stamp's __CUDA_ARCH_LIST__ names; items that are
// not numbers are left out (the stamp is informative, the fat binary decides).
std::set<int> stamp_ccs(const std::string &list) {
  std::set<int> ccs;
  std::size_t start = 0;
  while (start <= list.size()) {
    const std::size_t end = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, end - start);
    if (!item.empty() && item.size() <= 5 &&
        std::all_of(item.begin(), item.end(), [](unsigned char c) { return std::isdigit(c) != 0; })) {
      ccs.insert(std::stoi(item) / 10);
    }
    start = end + 1;
  }
  return ccs;
}

// Each virtual arch the stamp's unit was compiled for (compute_80) yields PTX of it or SASS of it
// or a later SM (nvcc -gencode arch=compute_80,code=sm_90), so some held arch reaches it.
void check_stamp(const DeviceCode &code, const FileStamp &stamp, const std::string &file) {
  const std::vector<Arch> held = code.archs();
  for (const int cc : stamp_ccs(stamp.archs)) {
    const bool found = std::any_of(held.begin(), held.end(), [&](const Arch &arch) { return arch.cc() >= cc; });
    if (!found) {
      throw IntegrityError(file + ": its build stamp says it was compiled for compute capability " +
                           std::to_string(cc / 10) + "." + std::to_string(cc % 10) + " (__CUDA_ARCH_LIST__ \"" +
                           stamp.archs + "\"), but its fat binaries hold " + describe_archs(held) +
                           ": the device code was replaced or stripped; publish the file as the build linked it");
    }
  }
}

}  // namespace

std::vector<Arch> backed_archs(std::string_view bytes, const ElfFacts &elf, const FileStamp &stamp, ArchClaim claim,
                               const std::vector<Arch> &listed, const std::string &claimant, const std::string &file) {
  const DeviceCode code = read_device_code(bytes, elf, file);
  const std::vector<Arch> held = code.archs();
  if (code.any() && held.empty()) {
    throw IntegrityError(file + (code.fatbin_section ? " has a .nv_fatbin section without SASS or PTX"
                                                      : " registers a CUDA fat binary (__cudaRegisterFatBinary) but "
                                                        "has no .nv_fatbin section") +
                         ": its device code was stripped or damaged, so kiln cannot tell which GPUs it runs on; "
                         "publish the file as the build linked it");
  }
  check_stamp(code, stamp, file);
  switch (claim) {
    case ArchClaim::from_file:
      return held;
    case ArchClaim::host_only:
      if (code.any()) {
        throw IntegrityError(file + " holds device code (" + describe_archs(held) + "), but " + claimant +
                             " says it is host-only: a host-only entry would load on any GPU and fail at its "
                             "first kernel launch; record the archs the file holds (kiln publish without --arch)");
      }
      return {};
    case ArchClaim::recorded:
      if (!code.any()) return listed;
      break;
    case ArchClaim::listed:
      break;
  }
  std::vector<Arch> missing;
  for (const auto &arch : listed) {
    if (!holds(held, arch)) missing.push_back(arch);
  }
  if (!missing.empty()) {
    throw IntegrityError(file + " holds no device code for " + listed_text(missing) + ", which " + claimant +
                         " claims; the file holds " + describe_archs(held) +
                         ": a GPU of that arch would find no kernel image; record what the file holds (kiln "
                         "publish without --arch) or rebuild it for " + listed_text(missing));
  }
  return listed;
}

void check_recorded_archs(std::string_view bytes, const FileStamp &stamp, const std::vector<Arch> &recorded,
                          const std::string &file) {
  ElfFacts elf;
  try {
    elf = read_elf(bytes, file);
  } catch (const AbiError &error) {  // its digest matched, so the entry itself is wrong: damage
    throw IntegrityError(error.what());
  }
  (void)backed_archs(bytes, elf, stamp, recorded.empty() ? ArchClaim::host_only : ArchClaim::recorded, recorded,
                     "its identity.json (archs [" + listed_text(recorded) + "])", file);
}

}  // namespace kiln::artifact
