#include "bundle/verify.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "bundle/archive.hpp"
#include "bundle/hash.hpp"
#include "bundle/index.hpp"
#include "bundle/keys.hpp"
#include "bundle/release_versions.hpp"
#include "bundle/signer_check.hpp"
#include "artifact/identity_json.hpp"
#include "load/entry_checks.hpp"
#include "store/entry.hpp"
#include "files/files.hpp"
#include "files/unique_fd.hpp"
#include "support/fault_point.hpp"
#include "support/typed_errors.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

namespace fs = boost::filesystem;

constexpr std::size_t kChunk = 1 << 16;

// "a/b/c" with no empty, "." or ".." component and no leading '/': a name that stays inside.
bool is_safe_relative(const std::string &name) {
  if (name.empty() || name.front() == '/' || name.find('\0') != std::string::npos) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = name.find('/', start);
    const std::string part = name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

std::string member_path(archive_entry *entry) {
  const char *name = archive_entry_pathname(entry);
  return name != nullptr ? name : "";
}

// The bundle as libarchive streams it: zstd-compressed tar, nothing else.
class Reader {
 public:
  Reader(const std::string &bundle, const Refusal &refuse) : refuse_(refuse) {
    try {
      fd_.reset(files::open_regular(bundle, files::FileOrigin::input));
    } catch (const NotFoundError &) {
      throw NotFoundError("bundle " + bundle + " does not exist: pass the path of a file kiln export wrote");
    }
    archive_.reset(archive_read_new());
    if (!archive_) throw std::bad_alloc();
    if (archive_read_support_filter_zstd(archive_.get()) != ARCHIVE_OK ||
        archive_read_support_format_tar(archive_.get()) != ARCHIVE_OK) {
      throw Error(ErrorKind::other, "libarchive cannot read zstd-compressed tar archives: " +
                                        std::string(archive_message(archive_.get())));
    }
    if (archive_read_open_fd(archive_.get(), fd_.get(), kChunk) != ARCHIVE_OK) {
      refuse_("is not a kiln bundle, or is cut short (" + std::string(archive_message(archive_.get())) + ")",
              "pass a complete file kiln export wrote");
    }
    // libarchive reads an uncompressed tar through its always-on "none" filter: the format is
    // zstd over tar and nothing else, one filter deep.
    if (archive_filter_count(archive_.get()) != 2 || archive_filter_code(archive_.get(), 0) != ARCHIVE_FILTER_ZSTD) {
      refuse_("is not compressed with zstd (" + std::string(archive_filter_name(archive_.get(), 0)) +
                  "): a kiln bundle is a zstd-compressed tar",
              "pass a file kiln export wrote; a plain tar is no kiln bundle");
    }
  }

  // The next member's header; nullptr at the archive's end.
  archive_entry *next() {
    archive_entry *entry = nullptr;
    const int status = archive_read_next_header(archive_.get(), &entry);
    if (status == ARCHIVE_EOF) return nullptr;
    if (status != ARCHIVE_OK) damaged();
    current_ = member_path(entry).substr(0, 200);
    return entry;
  }

  // Streams the current member's data to `sink`; returns the bytes read.
  template <class Sink>
  std::uint64_t read(const Sink &sink) {
    char buffer[kChunk];
    std::uint64_t total = 0;
    while (true) {
      const la_ssize_t got = archive_read_data(archive_.get(), buffer, sizeof buffer);
      if (got == 0) return total;
      if (got < 0) damaged();
      total += static_cast<std::uint64_t>(got);
      sink(buffer, static_cast<std::size_t>(got));
    }
  }

 private:
  [[noreturn]] void damaged() {
    refuse_("is cut short or damaged " + (current_.empty() ? std::string("at its start") : "after member " + current_) +
            " (" + archive_message(archive_.get()) + ")");
  }

  const Refusal &refuse_;
  std::string current_;  // the member being read, for messages
  files::UniqueFd fd_;
  ReadArchive archive_;
};


// Only regular files, with a size in their header: no link, device, FIFO or directory.
void check_regular(archive_entry *entry, const Refusal &refuse) {
  const std::string name = member_path(entry).substr(0, 200);
  const char *what = nullptr;
  if (archive_entry_hardlink(entry) != nullptr) {
    what = "a hard link";
  } else if (archive_entry_symlink(entry) != nullptr || archive_entry_filetype(entry) == AE_IFLNK) {
    what = "a symbolic link";
  } else {
    switch (archive_entry_filetype(entry)) {
      case AE_IFREG: break;
      case AE_IFDIR: what = "a directory"; break;
      case AE_IFCHR: what = "a character device"; break;
      case AE_IFBLK: what = "a block device"; break;
      case AE_IFIFO: what = "a FIFO"; break;
      default: what = "not a regular file"; break;
    }
  }
  if (what != nullptr) refuse("member \"" + name + "\" is " + what + ": a kiln bundle holds regular files only");
  if (!archive_entry_size_is_set(entry)) refuse("member \"" + name + "\" has no size in its header");
}

std::string read_small_member(Reader &reader, archive_entry *entry, std::uint64_t max, const Refusal &refuse) {
  check_regular(entry, refuse);
  const std::string name = member_path(entry);
  const auto size = archive_entry_size(entry);
  if (size < 0 || static_cast<std::uint64_t>(size) > max) {
    refuse("member " + name + " is " + std::to_string(size) + " bytes (at most " + std::to_string(max) + ")");
  }
  std::string bytes;
  reader.read([&](const char *data, std::size_t n) {
    if (bytes.size() + n > static_cast<std::uint64_t>(size)) refuse("member " + name + " is larger than its header says");
    bytes.append(data, n);
  });
  if (bytes.size() != static_cast<std::uint64_t>(size)) refuse("member " + name + " is cut short");
  return bytes;
}

// What the index declares must fit the target's free space before a byte is extracted: the
// declared sizes are the most an import writes (extract stops a member at its size), so a
// bundle can fill the disk no more than it is allowed to by that check.
void check_room(const fs::path &root, std::uint64_t declared, const Refusal &refuse) {
  fs::path existing = root;  // a fresh cache or --into directory: its nearest existing parent
  boost::system::error_code error;
  while (!existing.empty() && !fs::exists(existing, error)) existing = existing.parent_path();
  struct statvfs disk {};
  if (existing.empty() || ::statvfs(existing.c_str(), &disk) != 0) return;  // unknown: the writes will tell
  const std::uint64_t free_bytes = static_cast<std::uint64_t>(disk.f_bavail) * disk.f_frsize;
  if (declared > free_bytes) {
    throw IoError("bundle " + refuse.bundle() + " holds " + std::to_string(declared) + " bytes, more than the " +
                  std::to_string(free_bytes) + " bytes free in " + existing.string() +
                  "; nothing was imported (free space there, or import elsewhere with --into DIR)");
  }
}

// One file listed in the index, and whether its member has arrived.
struct Expected {
  std::size_t entry = 0;
  std::size_t file = 0;
  bool seen = false;
};

// The member's bytes into a new file of the staging directory, hashed on the way: checked
// against the index's size and BLAKE2b-256.
void extract(Reader &reader, const IndexEntry &entry, const IndexFile &file, const store::Staging &staging,
             const Refusal &refuse) {
  const std::string member = member_name(entry, file);
  files::StagingFileWriter target(staging.dir() / file.name, file.mode);
  Blake2b hash;
  const std::uint64_t read = reader.read([&](const char *data, std::size_t size) {
    // A member may decode to more than its header says (a sparse tar member whose map points
    // past its size expands to any length from a few bytes): not one byte past the index's size
    // reaches the disk.
    if (size > file.size - target.written()) {
      refuse("member " + member + " decodes to more than the " + std::to_string(file.size) +
             " bytes its index declares (a decompression bomb, or a damaged archive); stopped before writing past them");
    }
    target.append(data, size);
    hash.update(data, size);
  });
  if (read != file.size) refuse("member " + member + " holds " + std::to_string(read) + " bytes, the index says " + std::to_string(file.size));
  target.close();
  if (hash.hex() != file.blake2b) {
    refuse("member " + member + " does not have the BLAKE2b-256 its index records: its bytes were altered or damaged");
  }
}

// After every member arrived: the entry's own records, parsed by the store's parsers, agree
// with the index, list exactly the files the bundle carried, and every file has the XXH3
// digest meta.json records (what every later load checks).
store::EntryMeta verify_entry(const IndexEntry &entry, const store::Staging &staging, const Refusal &refuse) {
  const std::string at = std::string(kEntriesDir) + "/" + entry.consumer + "/" + entry.content_key;
  const fs::path label = fs::path(refuse.bundle()) / at;  // names the bundle in the parsers' messages
  std::set<std::string> carried;
  for (const auto &file : entry.files) carried.insert(file.name);
  if (!carried.count(store::kMetaFile) || !carried.count(store::kIdentityFile)) {
    refuse(at + " has no meta.json or identity.json in the index");
  }
  store::EntryMeta meta;
  try {
    meta = store::parse_entry_meta(files::read_file(staging.dir() / store::kMetaFile, files::FileOrigin::store,
                                                    files::kMaxJsonFileBytes),
                                   label);
    (void)artifact::parse_artifact_identity(
        files::read_file(staging.dir() / store::kIdentityFile, files::FileOrigin::store, files::kMaxJsonFileBytes),
        (label / store::kIdentityFile).string());
  } catch (const IntegrityError &error) {
    refuse(at + ": " + error.what());
  }
  if (meta.content_key != entry.content_key || meta.kind != entry.kind) {
    refuse(at + "/meta.json records " + meta.content_key + " (" + meta.kind + "), not the entry the index names");
  }
  std::set<std::string> listed{store::kMetaFile, store::kIdentityFile, meta.file};
  for (const auto &image : meta.images) listed.insert(image.file);
  if (listed != carried) refuse(at + ": the files the index lists are not the files its meta.json lists");
  if (!store::entry_files_intact(staging.dir(), meta)) {
    refuse(at + ": a file does not have the XXH3 digest its meta.json records");
  }
  // What a load would refuse (a plugin whose stamp names another entry) and recorded archs its
  // file does not back never enter the store.
  if (const std::string why = load::entry_file_disagreement(staging.dir(), meta); !why.empty()) refuse(at + ": " + why);
  return meta;
}

}  // namespace

// Steps 1-4 of an import: the index, the signature, every member into staging, every entry's
// records. Fills report's signature fields and verified_bytes. `role` is what the signer must
// be allowed to sign for where the store follows a key list (key_list.hpp).
VerifiedBundle verify_bundle(const store::Storage &target, const ImportRequest &request, const std::string &role,
                             const LogCallback &log, ImportReport &report) {
  if (request.bundle.empty()) throw UsageError("no bundle to import: pass FILE");
  const Refusal refuse(request.bundle);
  // Read first: a bad --trust file or a damaged key list is refused before any work.
  auto signers = std::make_unique<SignerCheck>(target, request.trusted_keys, role, request.bundle);
  Reader reader(request.bundle, refuse);

  // 1. The index, into memory only.
  archive_entry *member = reader.next();
  if (member == nullptr) refuse("is empty: not a kiln bundle", "pass a file kiln export wrote");
  if (member_path(member) != kIndexMember) {
    refuse("its first member is \"" + member_path(member).substr(0, 200) + "\", not " + kIndexMember +
               ": not a kiln bundle",
           "pass a file kiln export wrote");
  }
  const std::string index_text = read_small_member(reader, member, kMaxIndexBytes, refuse);
  report.verified_bytes += index_text.size();

  // 2. The signature, checked before anything else is read, let alone extracted; a key list
  // the bundle carries is signed by the root itself and checked against the store's first.
  member = reader.next();
  std::optional<Signature> signature;
  if (member != nullptr && member_path(member) == kSignatureMember) {
    signature = parse_signature(read_small_member(reader, member, kMaxSignatureBytes, refuse), request.bundle);
    member = reader.next();
  }
  if (member != nullptr && member_path(member) == kKeyListMember) {
    signers->offer_key_list(read_small_member(reader, member, kMaxKeyListBytes, refuse), log);
    member = reader.next();
  }
  signers->check_signature(index_text, signature, request.allow_unsigned, log, report);

  // 3. The index says what may follow: exactly these members, these sizes, these hashes.
  VerifiedBundle verified;
  verified.index = parse_index(index_text, request.bundle);
  const Index &index = verified.index;
  signers->check_authority(index, request.allow_expired, log);
  verified.signers = std::move(signers);
  // Expired metadata is refused (a frozen robot must not take an old release as current), with
  // a clock skew allowed; older kilns' bundles carry no expiry.
  report.expires = index.expires;
  if (const auto expires = support::parse_utc_time(index.expires)) {
    const std::int64_t now = std::time(nullptr);
    if (now > *expires + kClockSkewSeconds) {
      report.expired = true;
      if (!request.allow_expired) {
        refuse("expired at " + index.expires + " (this machine's clock says " + support::format_utc_time(now) + ", " +
                   std::to_string(kClockSkewSeconds / 60) + " minutes of clock skew allowed)",
               role == kRoleBuild
                   ? "a miss: this machine builds it, and a build machine's upload replaces it on the remote"
                   : "ask for a newer bundle, or pass --allow-expired if this machine's clock is known to be wrong");
      }
      if (log) log(LogLevel::warning, "bundle " + request.bundle + " expired at " + index.expires + ": imported anyway (--allow-expired)");
    }
  }
  std::map<std::string, Expected> expected;
  std::uint64_t declared = 0;
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    for (std::size_t f = 0; f < index.entries[e].files.size(); ++f) {
      expected[member_name(index.entries[e], index.entries[e].files[f])] = {e, f, false};
      declared += std::min(index.entries[e].files[f].size, kMaxBundleBytes + 1);  // no wrap-around
    }
  }
  if (declared > kMaxBundleBytes) refuse("holds more than " + std::to_string(kMaxBundleBytes) + " bytes");
  check_room(target.writable().root(), declared, refuse);

  // 4. Every member into a staging directory of its entry. A refusal anywhere destroys the
  // stagings (their destructor removes them): nothing becomes visible, nothing is left.
  auto &stagings = verified.stagings;
  stagings.resize(index.entries.size());
  std::uint64_t total = 0;
  std::set<std::string> swept;  // consumers whose leftovers this import swept
  for (; member != nullptr; member = reader.next()) {
    check_regular(member, refuse);
    const std::string name = member_path(member);
    const std::string shown = "\"" + name.substr(0, 200) + "\"";
    if (!is_safe_relative(name)) refuse("member " + shown + " is not a safe relative name (absolute, or with an empty, . or .. part)");
    if (name == kIndexMember || name == kSignatureMember || name == kKeyListMember)
      refuse("holds " + name + " twice, or out of its place");
    const auto found = expected.find(name);
    if (found == expected.end()) refuse("member " + shown + " is not listed in its index");
    if (found->second.seen) refuse("holds member " + shown + " twice");
    found->second.seen = true;
    const IndexEntry &entry = index.entries[found->second.entry];
    const IndexFile &file = entry.files[found->second.file];
    const auto size = archive_entry_size(member);
    if (size < 0 || static_cast<std::uint64_t>(size) != file.size) {
      refuse("member " + shown + " is " + std::to_string(size) + " bytes, its index says " + std::to_string(file.size));
    }
    total += file.size;
    if (total > kMaxBundleBytes) refuse("holds more than " + std::to_string(kMaxBundleBytes) + " bytes");
    auto &staging = stagings[found->second.entry];
    if (!staging) {
      // One sweep per consumer: later ones would only retry this import's own staging locks.
      const bool first = swept.insert(entry.consumer).second;
      staging.emplace(target.stage(entry.consumer, log, first ? store::SweepFirst::yes : store::SweepFirst::already_swept));
    }
    extract(reader, entry, file, *staging, refuse);
    KILN_FAULT_POINT("import.after_extract");
    report.verified_bytes += file.size;
  }
  for (const auto &[name, item] : expected) {
    if (!item.seen) refuse("has no member " + name + ", which its index lists: it was cut short");
  }
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    if (!stagings[e]) refuse("entry " + index.entries[e].consumer + "/" + index.entries[e].content_key + " carries no file");
    stagings[e]->adopt_records(verify_entry(index.entries[e], *stagings[e], refuse));
  }
  return verified;
}

}  // namespace kiln::bundle
