// The descriptors plugin files are dlopen'ed through ("/proc/self/fd/<n>"), one per file.
//
// glibc answers dlopen(name) with any loaded library it once opened under that name, and a load
// of an already loaded file (same device and inode) under another name returns the first
// library and records the new name as its alias, which no public list shows. So <n> must never
// name another file while a library is loaded under it, and aliases must not pile up: every load
// of one file goes through one descriptor, the first one verified and still open. It is closed
// when no Module holds it and dlopen(RTLD_NOLOAD) finds nothing loaded under its name; one whose
// library stays mapped (Module::keep_mapped, NODELETE) stays open and is reused by the next load
// of that file, so swapping back and forth to such a plugin takes no new descriptor.
//
// Whether a library is still loaded under <n> is read from the loader's own list
// (dl_iterate_phdr: no system call, where dlopen(RTLD_NOLOAD) of a name no longer loaded opens
// the file). With one descriptor per file the list's names are the names glibc answers for;
// the one case where they are not -- the host itself dlopen'ed the file under another path
// first, so <n> became an alias of that library -- is seen right after dlopen
// (note_dlopen_name) and that descriptor is never closed.
#pragma once

#include <cstdint>

#include "store/unique_fd.hpp"

namespace kiln::load {

// Takes over the verified descriptor of the file (device, inode; `verified` holds nothing after)
// and returns the descriptor to dlopen through: that one, now held here, or the one this file
// already has (then the verified one is closed: it names the same inode). One reference a call.
int share_mapped_fd(store::UniqueFd &verified, std::uint64_t device, std::uint64_t inode);

// After dlopen through `fd` returned `handle`: whether glibc keeps it under another name.
void note_dlopen_name(int fd, void *handle) noexcept;

// After the dlclose (or failed dlopen) of a library opened through `fd`: drops the reference.
void release_mapped_fd(int fd) noexcept;

}  // namespace kiln::load
