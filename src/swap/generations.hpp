// The cross-process swap trigger (docs/architecture.md §7): a generation counter per (consumer, name), in a
// small file of the writable cache shared by every process using that store, so that
// containers sharing a store volume share it too. Writers (kiln swap, kiln publish, kiln build,
// Runtime::publish/build whenever the manifest changes) bump it; a running controller's watcher
// thread polls it (a locked pread per poll, off the control thread) and swaps when it moves.
// Watchers also leave a record (pid, the generation they applied or refused and why) that
// `kiln swap` reads to say which running processes acknowledged.
//
// Every change is a read-modify-write under the file's lock (generations_file.hpp), each one
// pwrite of one slot or record, so a process killed at any moment leaves the file consistent
// and its lock released. A damaged, foreign or truncated file is never trusted: it is replaced
// (temp + rename) and the event logged; watchers reopen the new one.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <kiln/log.hpp>

namespace kiln::swap {

class GenerationsFile;  // swap/generations_file.hpp

inline constexpr std::size_t kSlots = 1024;        // (consumer, name) pairs one store can trigger
inline constexpr std::size_t kRecords = 256;       // watcher records (one per watching Swappable)
inline constexpr std::size_t kNoteBytes = 120;     // of a record's note

enum class Outcome : std::uint64_t { watching = 1, swapped = 2, unchanged = 3, refused = 4 };
const char *to_string(Outcome outcome);

// What one watcher process said about one (consumer, name).
struct Acknowledgement {
  std::int64_t pid = 0;
  // false: the record comes from another pid namespace (another container sharing the store):
  // whether that process still runs cannot be told from here, and the pid is its own namespace's.
  bool same_pid_namespace = true;
  std::uint64_t generation = 0;  // the newest generation it handled
  Outcome outcome = Outcome::watching;
  int error_kind = 0;            // ErrorKind of a refusal (its exit code), else 0
  std::string note;              // short, truncated to kNoteBytes
};

// What the latest bump asked for, as the watcher reads it.
struct Request {
  std::uint64_t generation = 0;
  std::optional<std::string> content_key;  // --to KEY; nullopt: what consumer/name resolves to
};

// One (consumer, name)'s place in the table, valid as long as the table.
struct SlotId {
  std::uint32_t index = 0;
  bool operator==(const SlotId &other) const { return index == other.index; }
  bool operator!=(const SlotId &other) const { return index != other.index; }
};

class GenerationTable {
 public:
  // Opens <cache_dir>/swap/generations, creating it (or replacing a damaged one) as needed.
  // IoError when that cannot be done (no writable cache): callers run without the trigger.
  static std::shared_ptr<GenerationTable> open(const std::string &cache_dir, const LogCallback &log);
  // The same, nullptr instead of the error; the error is logged once per cache per process.
  static std::shared_ptr<GenerationTable> open_or_log(const std::string &cache_dir, const LogCallback &log) noexcept;
  ~GenerationTable();
  GenerationTable(const GenerationTable &) = delete;
  GenerationTable &operator=(const GenerationTable &) = delete;

  const std::string &file() const;
  // False once another process replaced the file (it judged it damaged) or it was found
  // truncated in place: the caller reopens. One stat call.
  bool current() const noexcept;

  // consumer/name's slot, claimed when new; nullopt when the table is full (logged). Bad names
  // throw UsageError; IoError when the file cannot be read (truncated, locked for seconds).
  std::optional<SlotId> slot(const std::string &consumer, const std::string &name);
  // The slot's latest request: its generation and what it asked for. nullopt when the file
  // cannot be read now (truncated in place, locked for seconds): current() says whether to reopen.
  std::optional<Request> poll(SlotId slot) const noexcept;

  // Increments consumer/name's generation, asking for content_key when given (32 hex digits).
  // Returns the new generation; 0 when the table is full (logged). IoError when the file cannot
  // be read or written.
  std::uint64_t bump(const std::string &consumer, const std::string &name,
                     const std::optional<std::string> &content_key = std::nullopt);
  // A manifest change of consumer/name (publish, build, import): bumps its generation where a
  // watcher has claimed its slot; 0, and nothing written, for a name no watcher has claimed. A
  // watcher claims its slot before it first resolves the name, so it reads such a change itself;
  // an import of thousands of names leaves the table to the names controllers watch.
  std::uint64_t bump_if_watched(const std::string &consumer, const std::string &name);

  // Watcher records. claim: a free record for this process watching `slot` (free: never
  // claimed, or its process is gone: of this pid namespace dead, of another one silent past
  // foreign_timeout); -1 when all are taken or the file cannot be used (logged).
  int claim_record(SlotId slot, std::uint64_t generation);
  // The watcher says it is alive (about once a second); false when the record is no longer
  // this process's (another judged it gone): claim a new one.
  bool heartbeat(int record) noexcept;
  // How long a watcher of another pid namespace may stay silent before its record counts as
  // free (default 30 s): its pid cannot be checked from here. A watcher busy in one swap for
  // longer is listed again when it next writes.
  void set_foreign_timeout(std::chrono::seconds timeout) noexcept { foreign_timeout_ = timeout; }
  void acknowledge(int record, std::uint64_t generation, Outcome outcome, int error_kind, const std::string &note) noexcept;
  void release_record(int record) noexcept;
  // Records of consumer/name's watchers that may be alive (free ones, as claim judges them, are
  // left out). IoError when the file cannot be read.
  std::vector<Acknowledgement> acknowledgements(const std::string &consumer, const std::string &name) const;

 private:
  GenerationTable() = default;
  std::optional<SlotId> find(const std::string &consumer, const std::string &name, bool claim) const;
  std::uint64_t bump_slot(const std::string &consumer, const std::string &name,
                          const std::optional<std::string> &content_key, bool claim);
  bool reclaimable(const void *record, std::uint64_t now) const noexcept;
  std::unique_ptr<GenerationsFile> file_;
  LogCallback log_;
  std::chrono::seconds foreign_timeout_{30};
};

}  // namespace kiln::swap
