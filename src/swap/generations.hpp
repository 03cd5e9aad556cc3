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
// size or mode) is never trusted: it is replaced (temp + rename; generations_file.hpp) and the
// event logged.
#pragma once

#include <atomic>
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
inline constexpr std::size_t kRequestRing = 4;     // requested content keys in flight per slot

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

// What a bump asked for, as the watcher reads it.
struct Request {
  std::uint64_t generation = 0;
  std::optional<std::string> content_key;  // --to KEY; nullopt: what consumer/name resolves to
  bool torn = false;  // the key's record was being rewritten by a newer request: read it again
};

class GenerationTable {
 public:
  struct Slot;  // one (consumer, name): its counter, name and requested keys

  // Opens <cache_dir>/swap/generations, creating it (or replacing a damaged one) as needed.
  // IoError when that cannot be done (no writable cache): callers run without the trigger.
  static std::shared_ptr<GenerationTable> open(const std::string &cache_dir, const LogCallback &log);
  // The same, nullptr instead of the error; the error is logged once per cache per process.
  static std::shared_ptr<GenerationTable> open_or_log(const std::string &cache_dir, const LogCallback &log) noexcept;
  ~GenerationTable();
  GenerationTable(const GenerationTable &) = delete;
  GenerationTable &operator=(const GenerationTable &) = delete;

  const std::string &file() const;
  // False once another process replaced the file this table maps (it judged it damaged): the
  // caller reopens. One stat call.
  bool current() const noexcept;

  // consumer/name's slot, claimed when new; nullptr when the table is full (logged). Bad names
  // throw UsageError. The slot lives as long as the table.
  Slot *slot(const std::string &consumer, const std::string &name);
  // The word the watcher polls: one acquire load. generation_of(word) is its generation.
  const std::atomic<std::uint64_t> &counter(const Slot &slot) const noexcept;
  static std::uint64_t generation_of(std::uint64_t word) noexcept { return word >> 32; }
  // What the bump that wrote `word` asked for.
  Request request(const Slot &slot, std::uint64_t word) const noexcept;

  // Increments consumer/name's generation, asking for content_key when given (32 hex digits,
  // written before the bump). Returns the new generation; 0 when the table is full (logged).
  std::uint64_t bump(const std::string &consumer, const std::string &name,
                     const std::optional<std::string> &content_key = std::nullopt);

  // Watcher records. claim: a free record (or one of a dead process of this pid namespace) for
  // this process watching `slot`; -1 when all are taken (logged).
  int claim_record(const Slot &slot, std::uint64_t generation);
  void acknowledge(int record, std::uint64_t generation, Outcome outcome, int error_kind, const std::string &note) noexcept;
  void release_record(int record) noexcept;
  // Records of consumer/name's watchers that may be alive (those of dead pids of this pid
  // namespace are left out).
  std::vector<Acknowledgement> acknowledgements(const std::string &consumer, const std::string &name) const;

 private:
  GenerationTable() = default;
  Slot *find(const std::string &consumer, const std::string &name, bool claim);
  std::unique_ptr<GenerationsFile> file_;
  LogCallback log_;
};

}  // namespace kiln::swap
