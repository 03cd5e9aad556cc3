// Which entries running processes have loaded, for kiln gc, in any process of any container
// sharing the store: a loader holds a shared flock on the plugin file's descriptor from before
// its checks until the library is unmapped (the descriptor mapped_files.hpp keeps); gc takes
// the lock exclusively, without waiting, before it evicts an entry, and skips the entry when it
// cannot. flock, not a record lock: it belongs to the open file description, so threads and
// other descriptors of the same process do not release it (files/locks.hpp says why that
// matters), and it works on read-only file systems.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::store {

// Loader side: takes the shared lock on `fd` (the opened plugin `file`). While gc holds it
// (evicting this entry at this moment) waits up to a second; throws IoError when the lock
// stays busy. Then check_not_evicted on the descriptor's link count, from an fstat made after
// this returns (the loader's safety check makes it: one fstat serves both).
void hold_in_use(int fd, const std::string &file);

// The same without waiting, for a descriptor kept open across loads (load/mapped_files.hpp):
// false only while another descriptor holds the lock exclusively (gc evicting the file).
bool try_hold_in_use(int fd) noexcept;

// Throws NotFoundError when `links` (st_nlink of the held descriptor) is 0: gc evicted the
// file between the loader's open and its lock.
void check_not_evicted(std::uint64_t links, const std::string &file);

// gc side: the exclusive lock on `fd`, without waiting; false when a process has it loaded.
bool lock_unused(int fd) noexcept;

}  // namespace kiln::store
