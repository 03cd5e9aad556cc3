// The descriptors plugin files are dlopen'ed through ("/proc/self/fd/<n>"), one per file.
//
// glibc answers dlopen(name) with any loaded library it once opened under that name, and a load
// of an already loaded file (same device and inode) under another name returns the first
// library and records the new name as its alias, which no public list shows. So <n> must never
// name another file while a library is loaded under it, and aliases must not pile up: every load
// of one file goes through one descriptor, the first one verified and still open. One whose
// library stays mapped (Module::keep_mapped, NODELETE) stays open and is reused by the next load
// of that file, so swapping back and forth to such a plugin takes no new descriptor.
//
// When no Module holds it and nothing is loaded under its name any more, a descriptor loaded
// for a remembered resolution is kept open, idle, without its in-use lock (gc may evict the
// file), and the next load of that resolution reuses it: it takes the lock again and checks the
// descriptor (an fstat: still the file, a link left, safe) instead of opening the file again,
// which with the close costs more than the rest of kiln's work around dlopen. At most kMaxIdle
// (8) are kept, the least recently used closed first; the others are closed at their last
// unload. A resolution read again (its manifest or meta.json changed) has a new serial, so a
// replaced entry is always opened afresh. The cost: a file gc evicted stays allocated until the
// next load of its resolution or the idle descriptor's turn to close. A child process never
// reuses or unlocks a descriptor it inherited through fork() (it shares the parent's open file
// description, so unlocking it would release the parent's in-use lock): it closes its copy.
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

#include "files/unique_fd.hpp"

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
// resolution: the Storage serial of the resolution loaded (0: none), for reuse_kept_fd.
int share_mapped_fd(files::UniqueFd &verified, std::uint64_t device, std::uint64_t inode,
                    std::uint64_t resolution = 0);

// The descriptor an earlier load of `resolution` (a Storage serial: the same while the
// manifest and entry it was read from are unchanged) went through, with a reference taken: the
// warm load's file, without opening it. fd -1: none kept. The caller fstats it first (it must
// still be the file, device and inode, with a link left, else forget_kept_fd), then, when it
// was idle, takes the in-use lock (store::try_hold_in_use; busy: gc is evicting it, so
// release_mapped_fd and open afresh). The fstat comes before the lock so that a number the host
// closed and reused is never locked by kiln.
struct KeptFd {
  int fd = -1;
  std::uint64_t device = 0, inode = 0;
  bool idle = false;  // no in-use lock held: the caller takes it
};
KeptFd reuse_kept_fd(std::uint64_t resolution) noexcept;

// A kept descriptor that no longer names its file: no later load reuses it, and the reference
// reuse_kept_fd took is dropped. still_ours false: the number names another file (the host
// closed kiln's descriptor): the entry is dropped and nothing is closed.
void forget_kept_fd(int fd, bool still_ours) noexcept;

// After dlopen through `fd` returned `handle`: whether glibc keeps it under another name.
// Returns an address inside the library (its dynamic section) for release_mapped_fd, nullptr
// when it has none to give (no handle; the library kept under another name, never closed).
const void *note_dlopen_name(int fd, void *handle) noexcept;

// After the dlclose (or failed dlopen) of a library opened through `fd`: drops the reference.
// probe: what note_dlopen_name returned (nullptr: unknown), where the library was mapped.
void release_mapped_fd(int fd, const void *probe = nullptr) noexcept;

}  // namespace kiln::load
