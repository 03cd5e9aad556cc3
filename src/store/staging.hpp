// A private directory where a new store entry is assembled before Storage::commit makes it
// visible in one rename (docs/architecture.md §4: nothing is modified in place inside store/<key>/).
//
// Its liveness is a lock held inside it (kStagingLockFile), never a pid: a pid means nothing to
// a process in another pid namespace (a container sharing the cache), so a sweeper removes a
// staging directory only when it can take that lock (sweep.hpp).
#pragma once

#include <string>
#include <string_view>

#include <boost/filesystem/path.hpp>

#include "store/entry.hpp"
#include "files/locks.hpp"

namespace kiln::store {

// Whether stage() sweeps dead writers' leftovers (sweep.hpp) before making the directory. A
// writer that stages many entries of one consumer (an import) sweeps once, before the first:
// sweeping before each would try the locks of its own earlier stagings again every time,
// n(n-1)/2 attempts for n entries.
enum class SweepFirst { yes, already_swept };

class Staging {
 public:
  Staging(Staging &&other) noexcept;
  Staging &operator=(Staging &&other) noexcept;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  // A staging directory that was not committed is removed (still locked while it goes): a
  // failed or cancelled writer leaves nothing behind (a killed one leaves it to the next sweep).
  ~Staging();

  const std::string &consumer() const { return consumer_; }
  const boost::filesystem::path &dir() const { return dir_; }

  // A new file inside the entry; fsynced once, by the commit, before it becomes visible.
  void write(const std::string &name, std::string_view bytes, unsigned mode = 0644) const;
  // The entry's records, written last: meta.json (what the entry holds, with digests) and
  // identity.json (what decides whether it may load).
  void write_records(const EntryMeta &meta, const std::string &identity_json);
  // The same when the records arrived as files (a bundle import writes the bundle's own
  // meta.json and identity.json bytes with write()): `meta` is what the caller parsed back
  // from them and checked against the files.
  void adopt_records(const EntryMeta &meta) { meta_ = meta; }
  const EntryMeta &meta() const { return meta_; }
  bool has_records() const { return !meta_.content_key.empty(); }

 private:
  friend class LocalStore;
  // Creates <entries>/.staging-v2-<16 random hex digits> with an exclusive mkdir (a name is
  // never reused) and takes the lock inside it. No number follows the prefix, so kilns that
  // judged staging directories by the pid in their name never take this one for a dead pid's.
  Staging(std::string consumer, const boost::filesystem::path &entries);
  void release();  // committed: the directory is the entry now (or gone); the lock is dropped

  std::string consumer_;
  boost::filesystem::path dir_;
  files::FileLock lock_;
  EntryMeta meta_;
};

}  // namespace kiln::store
