// The generation table: <writable cache>/swap/generations, a fixed-size file mapped MAP_SHARED.
//
// Why a file in the cache and not /dev/shm (or a Boost.Interprocess shared_memory_object, which
// lives there): containers that share a store volume share its files, not /dev/shm, so a
// `kiln publish` in a build container reaches the controller in another. Plain mmap rather than
// Boost.Interprocess' file_mapping: the file is opened O_NOFOLLOW | O_NONBLOCK and checked
// (fstat) before anything maps it, which file_mapping's open does not allow.
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
// Only the owner of the file may have written it (same uid, not writable by group or others);
// the same uid could also truncate it under a mapping (SIGBUS), but that user can ptrace the
// controller anyway, and kiln itself never truncates: it replaces by rename.
#include "swap/generations.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
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

#include "store/files.hpp"
#include "store/names.hpp"
#include "store/unique_fd.hpp"

namespace kiln::swap {

using Word = std::atomic<std::uint64_t>;
static_assert(Word::is_always_lock_free, "the table's fields must be lock-free across processes");
static_assert(sizeof(Word) == 8 && alignof(Word) == 8, "a field is one aligned 64-bit word");
static_assert(std::is_standard_layout_v<Word>);

namespace {

constexpr std::uint64_t kMagic = 0x314e45476e6c696bull;  // "kilnGEN1" little-endian
constexpr std::uint64_t kLayoutVersion = 1;
constexpr std::size_t kNameWords = 17;  // "consumer/name": 64 + 1 + 64 bytes, zero padded
constexpr std::size_t kKeyChunks = 4;   // 32 hex digits = 4 x 32 bits
constexpr std::uint64_t kTagReady = 1;  // tag's low bit: the name is written

struct Header {
  Word magic, layout, slots, records, size, reserved[3];
};

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
  Header header;
  GenerationTable::Slot slots[kSlots];
  Record records[kRecords];
};

static_assert(sizeof(GenerationTable::Slot) == 40 * 8 && sizeof(Record) == 24 * 8 && sizeof(Header) == 8 * 8);
static_assert(sizeof(Layout) == sizeof(Header) + kSlots * sizeof(GenerationTable::Slot) + kRecords * sizeof(Record));
constexpr std::size_t kFileBytes = sizeof(Layout);

constexpr auto acquire = std::memory_order_acquire;
constexpr auto release = std::memory_order_release;
constexpr auto relaxed = std::memory_order_relaxed;

std::string error_text(int error) { return std::strerror(error); }

void safe_log(const LogCallback &log, LogLevel level, const std::string &line) noexcept {
  if (!log) return;
  try {
    log(level, line);
  } catch (...) {
  }
}

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

// Why the opened file cannot be trusted, or "" when it can.
std::string distrust(const struct stat &info) {
  if (!S_ISREG(info.st_mode)) return "not a regular file";
  if (info.st_uid != ::geteuid()) return "owned by uid " + std::to_string(info.st_uid) + ", not this user";
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) return "writable by group or others";
  if (static_cast<std::uint64_t>(info.st_size) != kFileBytes) {
    return std::to_string(info.st_size) + " bytes instead of " + std::to_string(kFileBytes);
  }
  return "";
}

std::string distrust(const Layout &layout) {
  if (layout.header.magic.load(acquire) != kMagic) return "no kiln generation table (bad magic)";
  if (layout.header.layout.load(relaxed) != kLayoutVersion || layout.header.slots.load(relaxed) != kSlots ||
      layout.header.records.load(relaxed) != kRecords || layout.header.size.load(relaxed) != kFileBytes) {
    return "another layout of the table";
  }
  return "";
}

// A fresh table in a temp file next to `file`, then linked (when absent) or renamed over it
// (replacing `damaged`, when it is still the file there).
void write_fresh(const std::string &dir, const std::string &file, const struct stat *damaged) {
  const std::string temp = dir + "/" + store::atomic_temp_prefix("generations") + store::unique_suffix();
  {
    store::UniqueFd fd(::open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd.get() < 0) throw IoError("cannot create " + temp + ": " + error_text(errno) + "; make " + dir + " writable");
    Header header{};
    header.magic.store(kMagic, relaxed);
    header.layout.store(kLayoutVersion, relaxed);
    header.slots.store(kSlots, relaxed);
    header.records.store(kRecords, relaxed);
    header.size.store(kFileBytes, relaxed);
    if (::fchmod(fd.get(), 0644) != 0 || ::ftruncate(fd.get(), static_cast<off_t>(kFileBytes)) != 0 ||
        ::pwrite(fd.get(), &header, sizeof header, 0) != static_cast<ssize_t>(sizeof header)) {
      const int error = errno;
      ::unlink(temp.c_str());
      throw IoError("cannot write " + temp + ": " + error_text(error));
    }
  }
  if (damaged == nullptr) {
    // link, not rename: two processes creating it at once both end up mapping the first one.
    const int linked = ::link(temp.c_str(), file.c_str());
    const int error = errno;
    ::unlink(temp.c_str());
    if (linked != 0 && error != EEXIST) throw IoError("cannot create " + file + ": " + error_text(error));
    return;
  }
  struct stat now {};
  if (::lstat(file.c_str(), &now) == 0 && (now.st_dev != damaged->st_dev || now.st_ino != damaged->st_ino)) {
    ::unlink(temp.c_str());  // another process replaced it meanwhile: use theirs
    return;
  }
  if (::rename(temp.c_str(), file.c_str()) != 0) {
    const int error = errno;
    ::unlink(temp.c_str());
    throw IoError("cannot replace the damaged " + file + ": " + error_text(error) + "; remove it");
  }
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

struct GenerationTable::Mapping {
  std::string file;
  void *base = MAP_FAILED;
  dev_t device = 0;
  ino_t inode = 0;
  Layout &layout() const { return *static_cast<Layout *>(base); }
  ~Mapping() {
    if (base != MAP_FAILED) ::munmap(base, kFileBytes);
  }
};

GenerationTable::~GenerationTable() = default;

const std::string &GenerationTable::file() const { return mapping_->file; }

bool GenerationTable::current() const noexcept {
  struct stat info {};
  return ::lstat(mapping_->file.c_str(), &info) == 0 && info.st_dev == mapping_->device &&
         info.st_ino == mapping_->inode;
}

std::shared_ptr<GenerationTable> GenerationTable::open(const std::string &cache_dir, const LogCallback &log) {
  const std::string dir = cache_dir + "/swap";
  const std::string file = dir + "/generations";
  try {
    store::create_directories(dir);
  } catch (const Error &error) {
    throw IoError(std::string("no cross-process swap trigger: ") + error.what());
  }
  struct stat dir_info {};
  if (::lstat(dir.c_str(), &dir_info) != 0 || !S_ISDIR(dir_info.st_mode) || dir_info.st_uid != ::geteuid() ||
      (dir_info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw IoError("no cross-process swap trigger: " + dir + " is not a directory of this user that only it can write "
                  "(a symlink, or writable by others); remove it and kiln makes a new one");
  }
  for (int attempt = 0; attempt < 4; ++attempt) {
    store::UniqueFd fd(::open(file.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
    struct stat info {};
    std::string why;
    if (fd.get() < 0) {
      const int error = errno;
      if (error == ENOENT) {
        write_fresh(dir, file, nullptr);
        continue;
      }
      if (error != ELOOP && error != EISDIR && error != ENXIO && error != EACCES) {
        throw IoError("no cross-process swap trigger: cannot open " + file + ": " + error_text(error));
      }
      if (::lstat(file.c_str(), &info) != 0) continue;
      if (error == EACCES && info.st_uid != ::geteuid()) {
        throw IoError("no cross-process swap trigger: " + file + " belongs to uid " + std::to_string(info.st_uid) +
                      " and this user cannot write it; run as that user or remove it");
      }
      why = S_ISLNK(info.st_mode) ? "a symbolic link" : "not a file this process can open (" + error_text(error) + ")";
    } else if (::fstat(fd.get(), &info) != 0) {
      throw IoError("no cross-process swap trigger: cannot stat " + file + ": " + error_text(errno));
    } else {
      why = distrust(info);
    }
    if (why.empty()) {
      auto mapping = std::make_unique<Mapping>();
      mapping->file = file;
      mapping->device = info.st_dev;
      mapping->inode = info.st_ino;
      mapping->base = ::mmap(nullptr, kFileBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
      if (mapping->base == MAP_FAILED) {
        throw IoError("no cross-process swap trigger: cannot map " + file + ": " + error_text(errno));
      }
      why = distrust(mapping->layout());
      if (why.empty()) {
        std::shared_ptr<GenerationTable> table(new GenerationTable());
        table->mapping_ = std::move(mapping);
        table->log_ = log;
        return table;
      }
    }
    safe_log(log, LogLevel::warning, "swap trigger table " + file + " is not trusted (" + why + "): replaced by a new one");
    write_fresh(dir, file, &info);
  }
  throw IoError("no cross-process swap trigger: " + file + " kept changing while it was opened (4 attempts); retry");
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
  Layout &layout = mapping_->layout();
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
    safe_log(log_, LogLevel::warning, "swap trigger table " + mapping_->file + " is full (" + std::to_string(kSlots) +
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
  Layout &layout = mapping_->layout();
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
  safe_log(log_, LogLevel::warning, "swap trigger table " + mapping_->file + ": all " + std::to_string(kRecords) +
                                        " watcher records are taken; this watcher's acknowledgements are not recorded");
  return -1;
}

void GenerationTable::acknowledge(int index, std::uint64_t generation, Outcome outcome, int error_kind,
                                  const std::string &note) noexcept {
  if (index < 0 || static_cast<std::size_t>(index) >= kRecords) return;
  Record &record = mapping_->layout().records[index];
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
  Record &record = mapping_->layout().records[index];
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
  const Layout &layout = mapping_->layout();
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
