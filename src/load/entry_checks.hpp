// What a store entry's artifact file must agree with beyond its digest, checked from the file's
// bytes alone: the rules a load applies before dlopen, for the readers that do not load
// (`kiln verify`, an import or remote fetch checking a bundle's entries before it commits them,
// an export checking what it sends).
#pragma once

#include <string>

#include <boost/filesystem/path.hpp>

#include "store/entry.hpp"

namespace kiln::load {

// For a plugin entry: its build stamp names the entry's content key (a file that was swapped
// into another entry carries the other's) and this kiln's ABI major, and the archs its
// identity.json records are held by the file's fat binaries (artifact/arch_claims.hpp: "host-only"
// only for a file without device code). Returns why the entry
// cannot load, or "" when it agrees (images entries: ""). The file's digest is the caller's
// to check first. IoError when it cannot be read.
std::string entry_file_disagreement(const boost::filesystem::path &entry_dir, const store::EntryMeta &meta);

}  // namespace kiln::load
