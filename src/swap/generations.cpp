// The generation table's operations: slots, the --to key ring, watcher records. The file they
// live in (<writable cache>/swap/generations, fixed-size, mapped MAP_SHARED) is opened, checked
// and replaced by generations_file.cpp.
//
// Layout: a header, kSlots slots, kRecords watcher records, every field a lock-free 64-bit
// atomic. Nothing is ever locked, so a process killed at any point leaves the file usable:
//   slot    tag (claimed by CAS: 0 -> claiming -> ready), the polled word (generation << 32 |
//           request ticket), a ticket counter, "consumer/name" (open addressing by its hash,
//           the name compared), and a ring of requested content keys, each 32-bit chunk stored
//           with its request's ticket so that a record half overwritten by a newer request is
//           seen as torn, never read as a key.
//   record  owner (pid-namespace id << 32 | pid, claimed by CAS), a seqlock (one writer: the
//           owning watcher), the slot watched, the generation handled, the outcome and a note.
#include "swap/generations.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <type_traits>

#include <kiln/errors.hpp>

#include "store/names.hpp"
#include "swap/generations_file.hpp"

namespace kiln::swap {

using Word = std::atomic<std::uint64_t>;
static_assert(Word::is_always_lock_free, "the table's fields must be lock-free across processes");
static_assert(sizeof(Word) == 8 && alignof(Word) == 8, "a field is one aligned 64-bit word");
static_assert(std::is_standard_layout_v<Word>);

namespace {

constexpr std::uint64_t kLayoutVersion = 1;  // bumped when Slot, Record or Layout change
constexpr std::size_t kNameWords = 17;  // "consumer/name": 64 + 1 + 64 bytes, zero padded
constexpr std::size_t kKeyChunks = 4;   // 32 hex digits = 4 x 32 bits
constexpr std::uint64_t kTagReady = 1;  // tag's low bit: the name is written

}  // namespace

struct GenerationTable::Slot {
  Word tag;      // 0: free; hash with low bit 0: being claimed; low bit 1: ready
  Word word;     // generation << 32 | ticket of the request that bumped it (0: none)
  Word tickets;  // request tickets handed out
  Word reserved;
  Word name[kNameWords];
  Word requests[kRequestRing][kKeyChunks];  // ticket << 32 | 32 bits of the key
  Word pad[3];
};

namespace {

struct Record {
  Word owner;        // pid-namespace id << 32 | pid; 0: free
  Word owner_check;  // owner as written under the seqlock: differs while a record changes hands
  Word seq;          // odd while its owner writes it
  Word slot;         // index + 1 of the slot watched
  Word generation;
  Word outcome;  // Outcome | error kind << 8
  Word note[kNoteBytes / 8];
  Word pad[3];
};

struct Layout {
  GenerationsHeader header;
  GenerationTable::Slot slots[kSlots];
  Record records[kRecords];
};

static_assert(sizeof(GenerationTable::Slot) == 40 * 8 && sizeof(Record) == 24 * 8 && sizeof(GenerationsHeader) == 8 * 8);
static_assert(sizeof(Layout) == sizeof(GenerationsHeader) + kSlots * sizeof(GenerationTable::Slot) + kRecords * sizeof(Record));
constexpr std::size_t kFileBytes = sizeof(Layout);

constexpr auto acquire = std::memory_order_acquire;
constexpr auto release = std::memory_order_release;
constexpr auto relaxed = std::memory_order_relaxed;

constexpr GenerationsShape kShape{kLayoutVersion, kSlots, kRecords, kFileBytes};

std::uint64_t hash_of(const std::string &text) {  // FNV-1a
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

void pack(const std::string &text, std::uint64_t (&words)[kNameWords]) {
  std::memset(words, 0, sizeof words);
  std::memcpy(words, text.data(), std::min(text.size(), sizeof words - 1));
}

std::string key_text(const std::uint32_t (&chunks)[kKeyChunks]) {
  char text[kKeyChunks * 8 + 1];
  for (std::size_t i = 0; i < kKeyChunks; ++i) std::snprintf(text + 8 * i, 9, "%08x", chunks[i]);
  return std::string(text, kKeyChunks * 8);
}

// This process's pid namespace (the inode of /proc/self/ns/pid), 0 when /proc cannot say.
std::uint32_t pid_namespace() {
  static const std::uint32_t id = [] {
    struct stat info {};
    return ::stat("/proc/self/ns/pid", &info) == 0 ? static_cast<std::uint32_t>(info.st_ino) : 0u;
  }();
  return id;
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

Layout &layout_of(const GenerationsFile &file) { return *static_cast<Layout *>(file.base()); }

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

GenerationTable::Slot *GenerationTable::find(const std::string &consumer, const std::string &name, bool claim) {
  store::validate_name("consumer", consumer);
  store::validate_name("artifact name", name);
  const std::string key = consumer + "/" + name;
  std::uint64_t words[kNameWords];
  pack(key, words);
  const std::uint64_t hash = hash_of(key);
  const std::uint64_t claiming = (hash | 2) & ~kTagReady;  // never 0
  Layout &layout = layout_of(*file_);
  for (std::size_t probe = 0; probe < kSlots; ++probe) {
    Slot &slot = layout.slots[(hash + probe) % kSlots];
    std::uint64_t tag = slot.tag.load(acquire);
    if (tag == 0) {
      if (!claim) return nullptr;  // open addressing: a free slot ends the search
      if (slot.tag.compare_exchange_strong(tag, claiming, std::memory_order_acq_rel)) {
        for (std::size_t i = 0; i < kNameWords; ++i) slot.name[i].store(words[i], relaxed);
        slot.tag.store(claiming | kTagReady, release);
        return &slot;
      }
    }
    if ((tag | kTagReady) != (claiming | kTagReady)) continue;
    if (tag == claiming) {
      // Being claimed by another process: it writes the name in microseconds. One that died
      // doing so left it half written; after a moment the name is written again (same bytes).
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
      while ((tag = slot.tag.load(acquire)) == claiming && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::yield();
      }
      if (tag == claiming) {
        for (std::size_t i = 0; i < kNameWords; ++i) slot.name[i].store(words[i], relaxed);
        slot.tag.compare_exchange_strong(tag, claiming | kTagReady, std::memory_order_acq_rel);
      }
    }
    bool same = true;
    for (std::size_t i = 0; same && i < kNameWords; ++i) same = slot.name[i].load(relaxed) == words[i];
    if (same) return &slot;
  }
  if (claim) {
    safe_log(log_, LogLevel::warning, "swap trigger table " + file_->path() + " is full (" + std::to_string(kSlots) +
                                          " consumer/name pairs): " + key +
                                          " gets no cross-process trigger; remove the file to start over");
  }
  return nullptr;
}

GenerationTable::Slot *GenerationTable::slot(const std::string &consumer, const std::string &name) {
  return find(consumer, name, true);
}

const std::atomic<std::uint64_t> &GenerationTable::counter(const Slot &slot) const noexcept { return slot.word; }

Request GenerationTable::request(const Slot &slot, std::uint64_t word) const noexcept {
  Request request;
  request.generation = generation_of(word);
  const auto ticket = static_cast<std::uint32_t>(word);
  if (ticket == 0) return request;
  std::uint32_t chunks[kKeyChunks];
  for (std::size_t i = 0; i < kKeyChunks; ++i) {
    const std::uint64_t part = slot.requests[ticket % kRequestRing][i].load(acquire);
    if (static_cast<std::uint32_t>(part >> 32) != ticket) {
      request.torn = true;
      return request;
    }
    chunks[i] = static_cast<std::uint32_t>(part);
  }
  try {
    request.content_key = key_text(chunks);
  } catch (...) {
    request.torn = true;
  }
  return request;
}

std::uint64_t GenerationTable::bump(const std::string &consumer, const std::string &name,
                                    const std::optional<std::string> &content_key) {
  if (content_key && !store::is_valid_key(*content_key)) {
    throw UsageError("content key \"" + *content_key + "\" is not 32 lower-case hex digits (kiln ls lists keys)");
  }
  Slot *slot = find(consumer, name, true);
  if (slot == nullptr) return 0;
  std::uint32_t ticket = 0;
  if (content_key) {
    while (ticket == 0) ticket = static_cast<std::uint32_t>(slot->tickets.fetch_add(1, relaxed) + 1);
    for (std::size_t i = 0; i < kKeyChunks; ++i) {
      const auto chunk = static_cast<std::uint32_t>(std::stoul(content_key->substr(8 * i, 8), nullptr, 16));
      slot->requests[ticket % kRequestRing][i].store(static_cast<std::uint64_t>(ticket) << 32 | chunk, release);
    }
  }
  // The key is written before the bump that names its ticket: a watcher that sees the bump
  // (acquire) sees the key, or a newer request's chunks (torn: it reads again).
  std::uint64_t word = slot->word.load(relaxed);
  std::uint64_t next = 0;
  do {
    next = ((generation_of(word) + 1) << 32) | ticket;
  } while (!slot->word.compare_exchange_weak(word, next, std::memory_order_acq_rel, relaxed));
  return generation_of(next);
}

int GenerationTable::claim_record(const Slot &slot, std::uint64_t generation) {
  Layout &layout = layout_of(*file_);
  const std::uint64_t me = owner_of_this_process();
  for (std::size_t i = 0; i < kRecords; ++i) {
    Record &record = layout.records[i];
    std::uint64_t owner = record.owner.load(acquire);
    if (owner != 0 && !(same_namespace(owner) && dead(owner))) continue;
    if (!record.owner.compare_exchange_strong(owner, me, std::memory_order_acq_rel)) continue;
    const std::uint64_t seq = record.seq.load(relaxed);
    record.seq.store(seq | 1, release);
    record.slot.store(static_cast<std::uint64_t>(&slot - layout.slots) + 1, release);
    record.owner_check.store(me, release);
    record.seq.store((seq | 1) + 1, release);
    acknowledge(static_cast<int>(i), generation, Outcome::watching, 0, "");
    return static_cast<int>(i);
  }
  safe_log(log_, LogLevel::warning, "swap trigger table " + file_->path() + ": all " + std::to_string(kRecords) +
                                        " watcher records are taken; this watcher's acknowledgements are not recorded");
  return -1;
}

void GenerationTable::acknowledge(int index, std::uint64_t generation, Outcome outcome, int error_kind,
                                  const std::string &note) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return;
  Record &record = layout_of(*file_).records[index];
  std::uint64_t words[kNoteBytes / 8] = {};
  std::memcpy(words, note.data(), std::min(note.size(), sizeof words));
  const std::uint64_t seq = record.seq.load(relaxed);
  record.seq.store(seq | 1, release);  // one writer: the owning watcher
  record.generation.store(generation, release);
  record.outcome.store(static_cast<std::uint64_t>(outcome) | static_cast<std::uint64_t>(error_kind & 0xff) << 8, release);
  for (std::size_t i = 0; i < kNoteBytes / 8; ++i) record.note[i].store(words[i], release);
  record.seq.store((seq | 1) + 1, release);
}

void GenerationTable::release_record(int index) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return;
  Record &record = layout_of(*file_).records[index];
  const std::uint64_t seq = record.seq.load(relaxed);
  record.seq.store(seq | 1, release);
  record.slot.store(0, release);
  record.owner_check.store(0, release);
  record.seq.store((seq | 1) + 1, release);
  record.owner.store(0, release);
}

std::vector<Acknowledgement> GenerationTable::acknowledgements(const std::string &consumer, const std::string &name) const {
  std::vector<Acknowledgement> out;
  Slot *slot = const_cast<GenerationTable *>(this)->find(consumer, name, false);
  if (slot == nullptr) return out;
  const Layout &layout = layout_of(*file_);
  const std::uint64_t index = static_cast<std::uint64_t>(slot - layout.slots) + 1;
  for (const Record &record : layout.records) {
    if (record.owner.load(acquire) == 0) continue;
    for (int attempt = 0; attempt < 1000; ++attempt) {
      const std::uint64_t seq = record.seq.load(acquire);
      if ((seq & 1) != 0) {
        std::this_thread::yield();
        continue;
      }
      const std::uint64_t owner = record.owner.load(acquire);
      const std::uint64_t check = record.owner_check.load(acquire);
      const std::uint64_t watched = record.slot.load(acquire);
      Acknowledgement ack;
      ack.generation = record.generation.load(acquire);
      const std::uint64_t outcome = record.outcome.load(acquire);
      char note[kNoteBytes + 1] = {};
      for (std::size_t i = 0; i < kNoteBytes / 8; ++i) {
        const std::uint64_t word = record.note[i].load(acquire);
        std::memcpy(note + 8 * i, &word, 8);
      }
      if (record.seq.load(acquire) != seq) continue;  // its owner wrote meanwhile: read again
      if (owner == 0 || owner != check || watched != index) break;  // free, changing hands, or another slot's
      ack.same_pid_namespace = same_namespace(owner);
      if (ack.same_pid_namespace && dead(owner)) break;
      ack.pid = static_cast<std::int64_t>(owner & 0xffffffffu);
      const std::uint64_t kind = outcome & 0xff;
      ack.outcome = kind >= 1 && kind <= 4 ? static_cast<Outcome>(kind) : Outcome::refused;
      ack.error_kind = static_cast<int>((outcome >> 8) & 0xff);
      ack.note = note;
      out.push_back(std::move(ack));
      break;
    }
  }
  return out;
}

}  // namespace kiln::swap