// What writers that died (SIGKILL, power cut) left behind, removed by the next writer: staging
// directories and atomic-write temps. None of it was ever visible, so removing it loses nothing;
// what a live writer (in any process, any pid namespace) is still using is never touched.
#pragma once

#include <chrono>
#include <vector>

#include "files/files.hpp"
#include "store/layout.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

// Lock-less directories under store/ named .staging-* are judged by age: those of kilns that
// predate staging locks (.staging-<pid>-*), entries moved aside as damaged or replaced by a
// forced rebuild (.staging-*-damaged, .staging-*-replaced, kept a day), and a held staging
// directory in the instants before its lock file exists or after commit removed it (modified
// just then). A build takes far less than a day, so such a directory unmodified (mtime and
// ctime) for a day is dead.
inline constexpr std::chrono::seconds kLocklessStagingGrace{24 * 3600};
// This kiln's own staging directories (.staging-v2-*) are lock-less only in those instants (the
// lock file is made right after the mkdir and removed right before the rename): one unmodified
// for files::kTempWriteBound (a minute) is dead.
inline constexpr std::chrono::seconds kLocklessV2StagingGrace = files::kTempWriteBound;

struct SweepCounts {
  int staging_dirs = 0;  // staging directories removed
  int temps = 0;         // .manifest.json.tmp-*, bykey/.<key>.tmp-* and objects/.*.tmp-* removed
  int total() const { return staging_dirs + temps; }
};

// Removes, for one consumer:
//  - store/.staging-* directories whose lock (kStagingLockFile inside) it can take: the holder
//    is dead. It keeps the lock while removing. Held ones are live and stay, whatever the pid
//    in their name; lock-less ones go once older than `lockless_grace` (`v2_grace` for
//    this kiln's .staging-v2-* directories).
//  - .manifest.json.tmp-*, when it can take manifest.lock (every manifest writer holds it), and
//    .versions.json.tmp-* when it can take versions.lock (the import's release versions);
//  - bykey/.<input_key>.tmp-*, when it can take locks/<input_key>.lock (a build writes its
//    pointer under that lock);
//    in both cases only temps untouched for files::kTempWriteBound (files.hpp), since a writer that
//    lost or never took the lock must not lose its temp either;
//  - objects/.*.tmp-* (object cache temps, written by builds of any key) untouched for
//    files::kTempWriteBound. A busy lock means a live
//    writer: skipped, never waited for. (The manifest writer also clears them, under its lock.)
// Never throws for what it finds: a leftover it cannot judge or remove is left in place.
SweepCounts sweep_leftovers(const ConsumerLayout &layout,
                            std::chrono::seconds lockless_grace = kLocklessStagingGrace,
                            std::chrono::seconds v2_grace = kLocklessV2StagingGrace);

// <cache>/abi (the plugin ABI headers builds include, builder/abi_headers.hpp): what its
// writers leave are ".staging-*" copies of a writer that died or failed (a full disk) and
// copies moved aside as ".damaged-*". A staging copy is due once its mtime is older than
// files::kTempWriteBound (no writer takes that long), a damaged one after kLocklessStagingGrace (a
// compile may have been reading it).
struct AbiLeftover {
  fs::path path;
  bool damaged = false;  // moved aside, not a staging copy
  bool due = false;      // old enough to remove
};
std::vector<AbiLeftover> abi_leftovers(const fs::path &abi_root);
// Removes the due ones (files::remove_tree); returns how many. Never throws.
int sweep_abi_leftovers(const fs::path &abi_root);

}  // namespace kiln::store
