// Named fault points for the crash-injection suite (tests/reliability), as SQLite tests its
// journal: with KILN_FAULT=<name>[:<nth>] in its environment a process SIGKILLs itself the nth
// time (default: the first) it passes the point <name>, exactly where a crash, an OOM kill or a
// power cut could stop it. The suite then checks what the store looks like to the next process.
//
// Unarmed (always, outside the suite) a point is one predictable branch on a flag read once per
// process. The variable is read with secure_getenv: a set-user-ID host ignores it.
#pragma once

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

namespace kiln::support {

// Every fault point, in one place: the suite enumerates this list and fails for a point that its
// scenario never reaches, and KILN_FAULT_POINT refuses at compile time a name not listed here.
inline constexpr const char *kFaultPoints[] = {
    "file.after_temp_write",  // write_file_atomic: the temp file is written, not yet fsynced
    "file.after_temp_fsync",  // ... the temp is fsynced and closed, not yet renamed over the file
    "file.after_rename",      // ... renamed over the file, its directory not yet fsynced
    "file.after_dir_fsync",   // ... the directory is fsynced: the write is complete
    "file.after_copy_fsync",  // copy_file_synced: the copy is complete and fsynced (callers rename it next)
    "staging.after_fsync",    // commit_staging: every staged file is fsynced (a batch: the file system synced), not yet renamed into the entry
    "staging.after_rename",   // ... staging renamed into the entry, store/ not yet fsynced (a batch: not yet synced)
    "build.after_entry",      // builder: the entry is committed, bykey not yet pointed at it
    "build.after_bykey",      // ... bykey points at it, the manifest is not yet updated
    "publish.after_entry",    // publish: the entry is committed (or reused), the manifest not yet updated
    "manifest.locked",        // update_manifest: manifest.lock held and the manifest read, not yet written
    "sweep.before_remove",    // sweep_dead_staging: a dead staging directory chosen, not yet removed
    "sweep.after_remove",     // ... removed
    "gc.after_rename",        // kiln gc: an evicted entry renamed out of store/, not yet removed
    "import.after_extract",   // kiln import: a member's bytes written into its entry's staging directory, not fsynced
    "import.after_versions",  // ... every entry staged and checked, the release versions recorded, nothing committed yet
    "import.after_key_list",  // ... a newer key list the bundle carried kept in the store's trust/, nothing committed yet
    "import.after_entry",     // ... an entry renamed into place (or an intact one kept), the next entry, the batch's sync or the pointers not yet
    "import.after_bykey",     // ... (Storage::point_all) a bykey pointer written, the next one or the manifests not yet
    "import.before_manifest", // ... every pointer written, this consumer's manifest not yet updated
    "import.after_manifest",  // ... this consumer's manifest updated, its swap trigger not yet bumped
    "repair.after_manifest_aside",  // kiln verify --repair: a damaged manifest renamed aside, its entries not yet checked
    "repair.after_move_aside",      // ... a damaged entry renamed aside, its manifest record not yet dropped
    "repair.after_drop_record",     // ... a record naming a missing or moved-aside entry dropped from the manifest
    "repair.after_drop_pointer",    // ... a dangling bykey pointer removed (the sweep of leftovers comes last)
};

constexpr bool same_fault_name(const char *a, const char *b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

constexpr bool is_fault_point(const char *name) {
  for (const char *point : kFaultPoints) {
    if (same_fault_name(point, name)) return true;
  }
  return false;
}

namespace fault_detail {

// What KILN_FAULT asks for, read once per process.
struct Armed {
  bool on = false;
  std::string name;
  long nth = 1;
  std::atomic<long> passed{0};

  Armed() {
    const char *value = ::secure_getenv("KILN_FAULT");
    if (value == nullptr || *value == '\0') return;
    std::string text(value);
    const std::size_t colon = text.find(':');
    if (colon != std::string::npos) {
      char *end = nullptr;
      nth = std::strtol(text.c_str() + colon + 1, &end, 10);
      if (*end != '\0' || nth < 1) return;  // malformed: stays unarmed, so the suite sees "never reached"
      text.resize(colon);
    }
    name = text;
    on = true;
  }
};

inline Armed &armed() {
  static Armed state;
  return state;
}

inline void reached(const char *name) {
  Armed &state = armed();
  if (state.name != name || state.passed.fetch_add(1) + 1 != state.nth) return;
  ::kill(::getpid(), SIGKILL);
  for (;;) ::pause();  // SIGKILL is never blocked: not reached
}

}  // namespace fault_detail
}  // namespace kiln::support

#define KILN_FAULT_POINT(name)                                                                   \
  do {                                                                                           \
    static_assert(::kiln::support::is_fault_point(name), "list " name " in kFaultPoints");      \
    if (__builtin_expect(::kiln::support::fault_detail::armed().on, 0)) {                        \
      ::kiln::support::fault_detail::reached(name);                                              \
    }                                                                                            \
  } while (0)
