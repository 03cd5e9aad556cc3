// Why a write into a store failed, when the reason is the store itself: a writable cache this
// user cannot write (a root-owned ~/.cache/kiln, a read-only mount) fails deep inside some verb
// with a bare EACCES on an inner path; said once here, with the fix, for every verb.
#pragma once

#include "store/layout.hpp"

namespace kiln::store {

// Called while an error from writing into `store` propagates (catch, call, rethrow): when the
// store's root (or, if absent, the directory it would be made in) is not writable and
// searchable by this process, throws IoError naming the root, what chose it and the fix (set
// KILN_CACHE_DIR to a writable directory; --into: another directory). Else returns.
void throw_if_unwritable(const StoreLocation &store);

}  // namespace kiln::store
