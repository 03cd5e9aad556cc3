// The generation table's operations: slots, requests, watcher records. The file they live in
// (<writable cache>/swap/generations, fixed-size) is opened, checked, locked and read by
// generations_file.cpp.
//
// Layout: a header, kSlots slots, kRecords watcher records. Each operation holds the file's
// lock, reads what it needs and writes back at most one slot or record with one pwrite, so a
// process killed at any point leaves every slot and record whole.
//   slot    tag (hash of "consumer/name" | 1; 0: free; open addressing by the hash, the name
//           compared), the generation, and the latest bump's requested content key (if any).
//   record  owner (pid-namespace id << 32 | pid; 0: free), the slot watched, the generation
//           handled, the outcome, a note, and when its owner last said it is alive. A record of
//           this pid namespace is free once kill(pid, 0) says its process is gone; one of
//           another namespace (another container), whose pid means nothing here, once its
//           heartbeat is older than the foreign timeout.
#include "swap/generations.hpp"

#include <signal.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <set>
#include <type_traits>

#include <kiln/errors.hpp>

#include "store/names.hpp"
#include "swap/generations_file.hpp"

namespace kiln::swap {

namespace {

constexpr std::uint64_t kLayoutVersion = 2;  // bumped when Slot, Record or the layout change (2: no mapping)
constexpr std::size_t kNameBytes = 136;  // "consumer/name": 64 + 1 + 64 bytes, zero padded
constexpr std::size_t kKeyBytes = 32;    // a content key: 32 hex digits

struct Slot {
  std::uint64_t tag;         // 0: free; else hash | 1
  std::uint64_t generation;
  std::uint64_t has_key;     // 1: the latest bump asked for `key`
  std::uint64_t reserved;
  char key[kKeyBytes];
  char name[kNameBytes];
  std::uint64_t pad[7];
};

struct Record {
  std::uint64_t owner;  // pid-namespace id << 32 | pid; 0: free
  std::uint64_t slot;   // index + 1 of the slot watched
  std::uint64_t generation;
  std::uint64_t outcome;  // Outcome | error kind << 8
  char note[kNoteBytes];
  std::uint64_t alive;  // CLOCK_BOOTTIME seconds of its owner's last heartbeat
};

static_assert(std::is_trivially_copyable_v<Slot> && std::is_trivially_copyable_v<Record>);
static_assert(sizeof(Slot) == 256 && sizeof(Record) == 160 && sizeof(GenerationsHeader) == 64);
constexpr std::size_t kSlotsAt = sizeof(GenerationsHeader);
constexpr std::size_t kRecordsAt = kSlotsAt + kSlots * sizeof(Slot);
constexpr std::size_t kFileBytes = kRecordsAt + kRecords * sizeof(Record);

constexpr GenerationsShape kShape{kLayoutVersion, kSlots, kRecords, kFileBytes};

std::size_t slot_offset(std::size_t index) { return kSlotsAt + index * sizeof(Slot); }
std::size_t record_offset(std::size_t index) { return kRecordsAt + index * sizeof(Record); }

std::uint64_t hash_of(const std::string &text) {  // FNV-1a
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// This process's pid namespace (the inode of /proc/self/ns/pid), 0 when /proc cannot say. Not
// remembered: a child forked into a new pid namespace must not claim with its parent's.
std::uint32_t pid_namespace() {
  struct stat info {};
  return ::stat("/proc/self/ns/pid", &info) == 0 ? static_cast<std::uint32_t>(info.st_ino) : 0u;
}

// Seconds since boot, suspend included: one clock for every container of the machine.
std::uint64_t boot_seconds() {
  struct timespec now {};
  ::clock_gettime(CLOCK_BOOTTIME, &now);
  return static_cast<std::uint64_t>(now.tv_sec);
}

std::uint64_t owner_of_this_process() {
  return static_cast<std::uint64_t>(pid_namespace()) << 32 | static_cast<std::uint32_t>(::getpid());
}

bool same_namespace(std::uint64_t owner) { return static_cast<std::uint32_t>(owner >> 32) == pid_namespace(); }

// Only for a record of this pid namespace: the pid of another one may name any process here.
bool dead(std::uint64_t owner) {
  const auto pid = static_cast<pid_t>(owner & 0xffffffffu);
  return pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH);
}

std::string unusable(const std::string &file) {
  return "swap trigger table " + file +
         " cannot be used now (truncated in place, unreadable, or locked by another process for 2 s); "
         "kiln replaces a truncated one on its next open -- retry";
}

}  // namespace

const char *to_string(Outcome outcome) {
  switch (outcome) {
    case Outcome::watching: return "watching";
    case Outcome::swapped: return "swapped";
    case Outcome::unchanged: return "unchanged";
    case Outcome::refused: return "refused";
  }
  return "?";
}

GenerationTable::~GenerationTable() = default;

const std::string &GenerationTable::file() const { return file_->path(); }

bool GenerationTable::current() const noexcept { return file_->current(); }

std::shared_ptr<GenerationTable> GenerationTable::open(const std::string &cache_dir, const LogCallback &log) {
  auto file = GenerationsFile::open(cache_dir, kShape, log);
  std::shared_ptr<GenerationTable> table(new GenerationTable());
  table->file_ = std::move(file);
  table->log_ = log;
  return table;
}

std::shared_ptr<GenerationTable> GenerationTable::open_or_log(const std::string &cache_dir, const LogCallback &log) noexcept {
  try {
    return open(cache_dir, log);
  } catch (const std::exception &error) {
    static std::mutex mutex;
    static std::set<std::string> logged;
    bool first = false;
    try {
      std::lock_guard<std::mutex> lock(mutex);
      first = logged.insert(cache_dir).second;
    } catch (...) {
    }
    if (first) safe_log(log, LogLevel::warning, std::string(error.what()) + " (running without it; said once per process)");
  } catch (...) {
  }
  return nullptr;
}

namespace {

struct FoundSlot {
  SlotId id;
  Slot slot;  // as read (or as just claimed)
};

// Bad names are refused (UsageError) before the file is touched.
void validate_names(const std::string &consumer, const std::string &name) {
  store::validate_name("consumer", consumer);
  store::validate_name("artifact name", name);
}

// consumer/name's slot (names validated), claimed when new and `claim`; the caller holds the
// file (exclusively when claiming). nullopt when absent (or the table is full: logged when claiming).
// Probing reads a block of slots with each pread: a name absent from a crowded table is
// answered with a few reads, not one per slot.
std::optional<FoundSlot> find_held(const GenerationsFile &file, const std::string &consumer, const std::string &name,
                                   bool claim, const LogCallback &log) {
  constexpr std::size_t kProbeBlock = 16;  // 4 KB
  const std::string key = consumer + "/" + name;
  char packed[kNameBytes] = {};
  std::memcpy(packed, key.data(), std::min(key.size(), kNameBytes - 1));
  const std::uint64_t hash = hash_of(key);
  const std::uint64_t tag = hash | 1;
  Slot block[kProbeBlock];
  for (std::size_t probe = 0; probe < kSlots;) {
    const std::size_t first = (hash + probe) % kSlots;
    const std::size_t count = std::min({kProbeBlock, kSlots - first, kSlots - probe});
    if (!file.read(slot_offset(first), block, count * sizeof(Slot))) throw IoError(unusable(file.path()));
    for (std::size_t i = 0; i < count; ++i, ++probe) {
      FoundSlot found{SlotId{static_cast<std::uint32_t>(first + i)}, block[i]};
      Slot &slot = found.slot;
      if (slot.tag == 0) {
        if (!claim) return std::nullopt;  // open addressing: a free slot ends the search
        slot.tag = tag;
        std::memcpy(slot.name, packed, sizeof packed);
        if (!file.write(slot_offset(first + i), &slot, sizeof slot)) throw IoError(unusable(file.path()));
        return found;
      }
      if (slot.tag == tag && std::memcmp(slot.name, packed, sizeof packed) == 0) return found;
    }
  }
  if (claim) {
    safe_log(log, LogLevel::warning, "swap trigger table " + file.path() + " is full (" + std::to_string(kSlots) +
                                         " consumer/name pairs): " + key +
                                         " gets no cross-process trigger; remove the file to start over");
  }
  return std::nullopt;
}

}  // namespace

std::optional<SlotId> GenerationTable::find(const std::string &consumer, const std::string &name, bool claim) const {
  validate_names(consumer, name);
  const auto held = file_->hold(claim);
  if (!held) throw IoError(unusable(file_->path()));
  const auto found = find_held(*file_, consumer, name, claim, log_);
  if (!found) return std::nullopt;
  return found->id;
}

std::optional<SlotId> GenerationTable::slot(const std::string &consumer, const std::string &name) {
  return find(consumer, name, true);
}

std::optional<Request> GenerationTable::poll(SlotId id) const noexcept {
  Slot slot{};
  {
    const auto held = file_->hold(false);
    if (!held || !file_->read(slot_offset(id.index), &slot, sizeof slot)) return std::nullopt;
  }
  Request request;
  request.generation = slot.generation;
  try {
    if (slot.has_key == 1) {
      std::string key(slot.key, kKeyBytes);
      if (store::is_valid_key(key)) request.content_key = std::move(key);
    }
  } catch (...) {
    return std::nullopt;  // out of memory: polled again
  }
  return request;
}

std::uint64_t GenerationTable::bump(const std::string &consumer, const std::string &name,
                                    const std::optional<std::string> &content_key) {
  if (content_key && !store::is_valid_key(*content_key)) {
    throw UsageError("content key \"" + *content_key + "\" is not 32 lower-case hex digits (kiln ls lists keys)");
  }
  return bump_slot(consumer, name, content_key, true);
}

std::uint64_t GenerationTable::bump_if_watched(const std::string &consumer, const std::string &name) {
  return bump_slot(consumer, name, std::nullopt, false);
}

std::uint64_t GenerationTable::bump_slot(const std::string &consumer, const std::string &name,
                                         const std::optional<std::string> &content_key, bool claim) {
  validate_names(consumer, name);
  // One hold for finding (or claiming) the slot and bumping it.
  const auto held = file_->hold(true);
  if (!held) throw IoError(unusable(file_->path()));
  auto found = find_held(*file_, consumer, name, claim, log_);
  if (!found) return 0;
  Slot &slot = found->slot;
  slot.generation += 1;
  slot.has_key = content_key ? 1 : 0;
  std::memset(slot.key, 0, sizeof slot.key);
  if (content_key) std::memcpy(slot.key, content_key->data(), kKeyBytes);
  if (!file_->write(slot_offset(found->id.index), &slot, sizeof slot)) throw IoError(unusable(file_->path()));
  return slot.generation;
}

bool GenerationTable::reclaimable(const void *stored, std::uint64_t now) const noexcept {
  const Record &record = *static_cast<const Record *>(stored);
  if (record.owner == 0) return true;
  if (same_namespace(record.owner)) return dead(record.owner);
  return record.alive + static_cast<std::uint64_t>(foreign_timeout_.count()) < now;
}

int GenerationTable::claim_record(SlotId slot, std::uint64_t generation) {
  const std::uint64_t me = owner_of_this_process();
  const std::uint64_t now = boot_seconds();
  const auto held = file_->hold(true);
  for (std::size_t i = 0; held && i < kRecords; ++i) {
    Record record{};
    if (!file_->read(record_offset(i), &record, sizeof record)) break;
    if (!reclaimable(&record, now)) continue;
    record = Record{};
    record.owner = me;
    record.slot = slot.index + 1;
    record.generation = generation;
    record.outcome = static_cast<std::uint64_t>(Outcome::watching);
    record.alive = now;
    if (!file_->write(record_offset(i), &record, sizeof record)) break;
    return static_cast<int>(i);
  }
  safe_log(log_, LogLevel::warning,
           held && file_->current()
               ? "swap trigger table " + file_->path() + ": all " + std::to_string(kRecords) +
                     " watcher records are taken; this watcher's acknowledgements are not recorded"
               : unusable(file_->path()) + "; this watcher's acknowledgements are not recorded until it reopens it");
  return -1;
}

bool GenerationTable::heartbeat(int index) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return false;
  const auto held = file_->hold(true);
  Record record{};
  if (!held || !file_->read(record_offset(index), &record, sizeof record)) return true;  // not now; not lost
  if (record.owner != owner_of_this_process()) return false;
  record.alive = boot_seconds();
  file_->write(record_offset(index), &record, sizeof record);
  return true;
}

void GenerationTable::acknowledge(int index, std::uint64_t generation, Outcome outcome, int error_kind,
                                  const std::string &note) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return;
  const auto held = file_->hold(true);
  Record record{};
  if (!held || !file_->read(record_offset(index), &record, sizeof record)) return;
  if (record.owner != owner_of_this_process()) return;  // no longer ours (another process judged us gone)
  record.generation = generation;
  record.outcome = static_cast<std::uint64_t>(outcome) | static_cast<std::uint64_t>(error_kind & 0xff) << 8;
  std::memset(record.note, 0, sizeof record.note);
  std::memcpy(record.note, note.data(), std::min(note.size(), sizeof record.note));
  file_->write(record_offset(index), &record, sizeof record);
}

void GenerationTable::release_record(int index) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return;
  const auto held = file_->hold(true);
  Record record{};
  if (!held || !file_->read(record_offset(index), &record, sizeof record)) return;
  if (record.owner != owner_of_this_process()) return;
  record = Record{};
  file_->write(record_offset(index), &record, sizeof record);
}

std::vector<Acknowledgement> GenerationTable::acknowledgements(const std::string &consumer, const std::string &name) const {
  std::vector<Acknowledgement> out;
  const auto id = find(consumer, name, false);
  if (!id) return out;
  std::vector<Record> records(kRecords);
  {
    const auto held = file_->hold(false);
    if (!held || !file_->read(kRecordsAt, records.data(), records.size() * sizeof(Record))) {
      throw IoError(unusable(file_->path()));
    }
  }
  const std::uint64_t now = boot_seconds();
  for (const Record &record : records) {
    if (record.slot != id->index + 1 || reclaimable(&record, now)) continue;
    Acknowledgement ack;
    ack.same_pid_namespace = same_namespace(record.owner);
    ack.pid = static_cast<std::int64_t>(record.owner & 0xffffffffu);
    ack.generation = record.generation;
    const std::uint64_t kind = record.outcome & 0xff;
    ack.outcome = kind >= 1 && kind <= 4 ? static_cast<Outcome>(kind) : Outcome::refused;
    ack.error_kind = static_cast<int>((record.outcome >> 8) & 0xff);
    ack.note = std::string(record.note, strnlen(record.note, sizeof record.note));
    out.push_back(std::move(ack));
  }
  return out;
}

}  // namespace kiln::swap
