// The checks on a plugin file before dlopen runs any of its code (constructors included): the
// digest its entry records and its build stamp (the content key the manifest names, this
// kiln's ABI major), both read from one mapping of the very descriptor dlopen then maps.
// Remembered by file identity, so a warm load of an unchanged file hashes and searches nothing;
// and, through the writable cache's verification records, across processes, so a fresh
// process's load of an unchanged file does not hash it either.
#pragma once

#include <kiln/log.hpp>
#include <kiln/module.hpp>

#include "store/maintenance/verification_records.hpp"

namespace kiln::load {

// Throws IntegrityError (digest differs; the stamp names another entry) or AbiError (no stamp,
// two stamps, a stamp of another ABI major), each naming the file and the fix.
// `id` is the identity of the descriptor's file, which the caller checked on its own (regular,
// owner, mode: files::check_fd_safe_to_execute). A file this process has not verified before
// also gets the directory walk up to its store root (files::check_directories); one it has --
// same identity, so the very bytes verified then -- needs neither walk nor hash: a directory
// changed since cannot change those bytes, only replace the file (a new identity).
// records: the persisted records to consult and extend (nullptr: none).
void verify_before_dlopen(int fd, const files::FileIdentity &id, const Resolution &resolution,
                          const store::VerificationRecords *records, const LogCallback &log);

}  // namespace kiln::load
