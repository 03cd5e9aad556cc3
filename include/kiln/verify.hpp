// kiln verify: check every store a process sees (or one store directory) the way a load and a
// build would -- every entry's records and digests, each manifest's references, bykey
// pointers, permissions, staging leftovers, orphans -- and optionally repair what can be
// repaired without losing anything: damaged entries are moved aside (never deleted), dangling
// records and pointers dropped, dead writers' leftovers swept.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln {

struct StoreFinding;

struct VerifyOptions {
  // Empty: every store of the Runtime (read-only layers, then the writable cache). Else this
  // one store directory (e.g. a vendor layer being prepared for a robot image); it is repaired
  // as writable when `repair` is set.
  std::string store_dir;
  bool repair = false;  // only in writable stores; a read-only layer's findings are reported
  // Called with each finding once it is final (its repair done), in the order found; the
  // findings then go here instead of into VerifyReport::findings, so that the memory a check
  // takes does not grow with what it finds (`kiln verify` prints each as it comes). Called on
  // the verifying thread; an exception it throws ends the check.
  std::function<void(const StoreFinding &)> on_finding;
};

struct StoreFinding {
  // What was found:
  //   damage (a load or build refuses it, or would be wrong):
  //     "damaged_entry"      meta.json or identity.json missing or malformed, another content
  //                          key inside, a file missing or with other bytes than its digest
  //     "missing_entry"      a manifest record names a content key that has no entry
  //     "damaged_manifest"   manifest.json malformed, of another schema, or not a regular file
  //     "unsafe_permissions" a store file or directory writable by group or others, owned by
  //                          another user, or a symlink inside the store (fix: chmod go-w, chown)
  //   stale (harmless, cleaned by writers and by --repair):
  //     "dangling_pointer"   bykey/<input key> damaged or naming no intact entry
  //     "staging_leftover"   a staging directory of a dead writer, or a damaged entry moved aside
  //     "temp_leftover"      an atomic-write temp of a dead writer
  //   info:
  //     "orphan_entry"       an intact entry no manifest record and no pointer names (kiln gc's)
  //     "foreign_file"       a name in a store directory that kiln never writes (left alone)
  std::string kind;
  std::string severity;  // "damage", "stale" or "info"
  std::string store;     // the store root
  std::string consumer;  // empty for store-level findings
  std::string path;
  std::string detail;    // why, and the fix where a person must act
  std::string repair;    // what --repair did ("moved aside to ...", "record dropped", "removed"),
                         // or why not ("read-only layer", "busy: a live writer holds it"); empty: not asked
  bool repaired = false;
};

struct VerifyReport {
  std::vector<std::string> stores;  // the store roots checked, in order
  std::uint64_t consumers = 0;
  std::uint64_t entries = 0;        // entries checked
  std::uint64_t files = 0;          // files whose digest was checked
  std::uint64_t bytes = 0;          // bytes hashed
  double seconds = 0;
  // Every finding, counted by severity whether or not it was kept below.
  std::uint64_t damage = 0, stale = 0, info = 0;
  std::uint64_t repaired = 0;
  std::uint64_t damage_left = 0;  // damage that is still there (not repaired): `kiln verify` exits 6
  std::vector<StoreFinding> findings;  // empty when VerifyOptions::on_finding took them
  std::uint64_t unrepaired_damage() const { return damage_left; }
  bool clean() const { return damage + stale + info == 0; }
};

}  // namespace kiln
