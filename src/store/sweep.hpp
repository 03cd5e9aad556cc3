// Staging directories of processes that died mid-publish or mid-build are removed by the
// next writer: they were never visible (never renamed into place), so removing them loses nothing.
#pragma once

#include "store/layout.hpp"

namespace kiln::store {

// Returns how many were removed. A directory whose pid is alive (or unparsable) is kept.
int sweep_dead_staging(const ConsumerLayout &layout);

}  // namespace kiln::store
