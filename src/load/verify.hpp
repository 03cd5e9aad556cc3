// The checks on a plugin file before dlopen runs any of its code (constructors included): the
// digest its entry records and its build stamp (the content key the manifest names, this
// kiln's ABI major), both read from one mapping of the very descriptor dlopen then maps.
// Remembered by file identity, so a warm load of an unchanged file hashes and searches nothing.
#pragma once

#include <kiln/module.hpp>

namespace kiln::load {

// Throws IntegrityError (digest differs; the stamp names another entry) or AbiError (no stamp,
// two stamps, a stamp of another ABI major), each naming the file and the fix.
void verify_before_dlopen(int fd, const Resolution &resolution);

}  // namespace kiln::load
