// The archs a plugin entry records are a claim its file must back: every SASS arch a cubin of
// the file's fat binaries, every PTX arch a PTX entry; "host-only" (no archs) only a file with
// no device code at all (no .nv_fatbin, no fat binary registration). `kiln publish` derives or
// checks the claim here; kiln verify, import and remote fetch check each entry's recorded archs
// the same way.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <kiln/identity.hpp>

#include "artifact/elf.hpp"
#include "artifact/stamp.hpp"

namespace kiln::artifact {

enum class ArchClaim {
  from_file,  // no claim: record what the file holds (host-only when it holds no device code)
  host_only,  // the file must hold no device code
  listed,     // the file must hold each listed arch
  recorded,   // an entry's record (import, remote fetch): as listed, except that a file with no
              // device code may record archs -- a host part whose kernels come through
              // kiln.host.kernels/1 records theirs (its recipe's archs), which restricts where it loads
};

// The archs to record for `file` (sorted as DeviceCode::archs orders them for from_file, else
// `listed` itself). Throws IntegrityError naming the file, what `claimant` ("--arch sm_80",
// "identity.json") claims and what the file holds when the claim is not backed; when the
// stamp's __CUDA_ARCH_LIST__ names a compute capability above every arch the fat binaries hold
// (its code was replaced or stripped); and for a fat binary that is damaged (read_fatbin).
std::vector<Arch> backed_archs(std::string_view bytes, const ElfFacts &elf, const FileStamp &stamp, ArchClaim claim,
                               const std::vector<Arch> &listed, const std::string &claimant, const std::string &file);

// For an entry already recorded (kiln verify, import, remote fetch: load/entry_checks.hpp):
// `recorded` empty claims host-only, else ArchClaim::recorded. AbiError of the ELF reader
// becomes IntegrityError (the entry's digest matched: its record is what is wrong).
void check_recorded_archs(std::string_view bytes, const FileStamp &stamp, const std::vector<Arch> &recorded,
                          const std::string &file);

}  // namespace kiln::artifact
