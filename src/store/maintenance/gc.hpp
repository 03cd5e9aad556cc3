// kiln gc's work on the writable cache: evict least-recently-used entries and object-cache files
// (kiln/gc.hpp says what is never evicted).
#pragma once

#include <kiln/gc.hpp>
#include <kiln/log.hpp>

#include "store/local_store.hpp"

namespace kiln::store {

// UsageError without a limit; IoError when another gc runs on the same cache. What it parses
// is not kept (ParsedRecords::forget): its memory does not grow with the cache.
GcReport collect_garbage(const LocalStore &cache, const GcOptions &options, const LogCallback &log);

}  // namespace kiln::store
