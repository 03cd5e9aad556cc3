// kiln verify's work on one store directory: every consumer's manifest, entries, bykey
// pointers and leftovers checked with the same readers and rules a load and a build use, and
// (when asked, in a writable store) repaired through LocalStore's repair primitives.
#pragma once

#include <kiln/log.hpp>
#include <kiln/verify.hpp>

#include <functional>
#include <string>

#include "store/entry.hpp"
#include "store/local_store.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

// What an entry's files must agree with beyond their digests, checked by the layer that reads
// artifacts (load/entry_checks.hpp: a plugin's build stamp names the entry): the reason an
// intact-by-digest entry still cannot load, or "" when it can.
using EntryFileCheck = std::function<std::string(const fs::path &entry_dir, const EntryMeta &meta)>;

using FindingCallback = std::function<void(const StoreFinding &)>;

// Counts what it finds in `store` into `report` and hands each finding, once final, to
// `on_finding` (when empty: appends it to report.findings). Never throws for what it finds in
// the store: an unreadable or hostile file is a finding. `repair` is ignored for a store that
// is not writable (each finding then says "read-only layer"). `check`, when given, runs on
// every entry whose files have their digests. What it parses is not kept (ParsedRecords::forget):
// its memory does not grow with the store.
void audit_store(const LocalStore &store, bool repair, VerifyReport &report, const FindingCallback &on_finding,
                 const LogCallback &log, const EntryFileCheck &check = {});

}  // namespace kiln::store
