// kiln verify's work on one store directory: every consumer's manifest, entries, bykey
// pointers and leftovers checked with the same readers and rules a load and a build use, and
// (when asked, in a writable store) repaired through LocalStore's repair primitives.
#pragma once

#include <kiln/log.hpp>
#include <kiln/verify.hpp>

#include "store/local_store.hpp"

namespace kiln::store {

// Appends what it finds in `store` to `report` (and adds to its counts). Never throws for what
// it finds in the store: an unreadable or hostile file is a finding. `repair` is ignored for a
// store that is not writable (each finding then says "read-only layer").
void audit_store(const LocalStore &store, bool repair, VerifyReport &report, const LogCallback &log);

}  // namespace kiln::store
