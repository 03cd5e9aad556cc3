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
// Whether a library is still loaded under <n> is read from the loader's own records, no system
// call (dlopen(RTLD_NOLOAD) of a name no longer loaded opens the file): nothing mapped any more
// where the library loaded through <n> was (glibc 2.35+'s _dl_find_object, no walk) means no;
// otherwise the list answers (dl_iterate_phdr). With one descriptor per file the list's names
// are the names glibc answers for; the one case where they are not -- the host itself
// dlopen'ed the file under another path first, so <n> became an alias of that library -- is
// seen right after dlopen (note_dlopen_name) and that descriptor is never closed.
#pragma once

#include <cstdint>

#include "store/unique_fd.hpp"

namespace kiln::load {

// "/proc/self/fd/<n>", built without allocating: every load and unload names its descriptor.
struct DescriptorName {
  char text[32];
  const char *c_str() const noexcept { return text; }
};
DescriptorName descriptor_name(int fd) noexcept;

// Takes over the verified descriptor of the file (device, inode; `verified` holds nothing after)
// and returns the descriptor to dlopen through: that one, now held here, or the one this file
// already has (then the verified one is closed: it names the same inode). One reference a call.
int share_mapped_fd(store::UniqueFd &verified, std::uint64_t device, std::uint64_t inode);

// After dlopen through `fd` returned `handle`: whether glibc keeps it under another name.
// Returns an address inside the library (its dynamic section) for release_mapped_fd, nullptr
// when it has none to give (no handle; the library kept under another name, never closed).
const void *note_dlopen_name(int fd, void *handle) noexcept;

// After the dlclose (or failed dlopen) of a library opened through `fd`: drops the reference.
// probe: what note_dlopen_name returned (nullptr: unknown), where the library was mapped.
void release_mapped_fd(int fd, const void *probe = nullptr) noexcept;

}  // namespace kiln::load
