// The cross-process swap trigger (DESIGN §7): a generation counter per (consumer, name), in a
// small file of the writable cache mapped shared by every process using that store, so that
// containers sharing a store volume share it too. Writers (kiln swap, kiln publish, kiln build,
// Runtime::publish/build whenever the manifest changes) bump it; a running controller's watcher
// thread reads it with one atomic load per poll (no system call) and swaps when it moves.
// Watchers also leave a record (pid, the generation they applied or refused and why) that
// `kiln swap` reads to say which running processes acknowledged.
//
// The file is fixed-size and only ever holds lock-free 64-bit atomics, so no lock is needed and
// a process killed at any moment leaves it consistent. A damaged or foreign file (wrong magic,
// size or mode) is never trusted: it is replaced (temp + rename) and the event logged.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <kiln/log.hpp>

namespace kiln::swap {

// What one watcher process said about one (consumer, name).
struct Acknowledgement {
  std::int64_t pid = 0;
  std::uint64_t generation = 0;  // the newest generation it handled
  bool swapped = false;          // false: refused (note says why) or already serving it
  std::string note;              // short, truncated to the record's size
};

class GenerationTable {
 public:
  // Opens (creating when absent) <cache_dir>/swap/generations. IoError when the cache is not
  // writable and the file does not exist: callers then run without the cross-process trigger.
  static std::shared_ptr<GenerationTable> open(const std::string &cache_dir, const LogCallback &log);
  ~GenerationTable();

  // The counter of consumer/name (created at 0 when new). The address stays valid as long as the
  // table lives; loading it is the watcher's poll. nullptr when the table is full (logged).
  const std::atomic<std::uint64_t> *counter(const std::string &consumer, const std::string &name);
  // Increments consumer/name's counter; returns the new generation (0 when the table is full).
  std::uint64_t bump(const std::string &consumer, const std::string &name);

  // Watcher records: the calling process says what it did with `generation`.
  void acknowledge(const std::string &consumer, const std::string &name, const Acknowledgement &ack);
  // Records of live processes watching consumer/name (dead pids' records are dropped).
  std::vector<Acknowledgement> acknowledgements(const std::string &consumer, const std::string &name) const;
  // Forget this process's watcher record of consumer/name (watcher stopped).
  void unregister(const std::string &consumer, const std::string &name);

 private:
  GenerationTable() = default;
  struct Mapping;
  std::unique_ptr<Mapping> mapping_;
};

}  // namespace kiln::swap
