// A private directory where a new store entry is assembled before Storage::commit makes it
// visible in one rename (DESIGN §4: nothing is modified in place inside store/<key>/).
#pragma once

#include <string>
#include <string_view>

#include <boost/filesystem/path.hpp>

#include "store/entry.hpp"

namespace kiln::store {

class Staging {
 public:
  Staging(Staging &&other) noexcept;
  Staging &operator=(Staging &&other) noexcept;
  Staging(const Staging &) = delete;
  Staging &operator=(const Staging &) = delete;
  // A staging directory that was not committed is removed: a failed or cancelled writer
  // leaves nothing behind (a killed one leaves it to the next sweep).
  ~Staging();

  const std::string &consumer() const { return consumer_; }
  const boost::filesystem::path &dir() const { return dir_; }

  // A new file inside the entry; fsynced once, by the commit, before it becomes visible.
  void write(const std::string &name, std::string_view bytes, unsigned mode = 0644) const;
  // The entry's records, written last: meta.json (what the entry holds, with digests) and
  // identity.json (what decides whether it may load).
  void write_records(const EntryMeta &meta, const std::string &identity_json);
  const EntryMeta &meta() const { return meta_; }
  bool has_records() const { return !meta_.content_key.empty(); }

 private:
  friend class LocalStore;
  Staging(std::string consumer, boost::filesystem::path dir);
  void release() { dir_.clear(); }  // committed: the directory is the entry now

  std::string consumer_;
  boost::filesystem::path dir_;
  EntryMeta meta_;
};

}  // namespace kiln::store
