#include "bundle/writer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>
#include <kiln/version.hpp>

#include "bundle/archive.hpp"
#include "bundle/hash.hpp"
#include "bundle/index.hpp"
#include "bundle/key_list.hpp"
#include "bundle/keys.hpp"
#include "bundle/release_versions.hpp"
#include "artifact/identity_json.hpp"
#include "load/entry_checks.hpp"
#include "files/digest.hpp"
#include "store/entry.hpp"
#include "files/files.hpp"
#include "store/manifest.hpp"
#include "store/names.hpp"
#include "files/unique_fd.hpp"
#include "support/typed_errors.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

namespace fs = boost::filesystem;

// One entry to carry: its index record and the bytes of each of its files, in index order.
// Held in memory between hashing and writing, so what is written is exactly what was hashed
// and checked against the store's digests (entries are bounded by kMaxMemberBytes each).
struct Carried {
  IndexEntry entry;
  std::vector<std::string> bytes;
};

unsigned mode_of(const fs::path &file) {
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) throw IoError("cannot stat " + file.string() + ": " + std::strerror(errno));
  return (st.st_mode & 0111) != 0 ? 0755 : 0644;
}

void add_file(Carried &carried, const fs::path &entry_dir, const std::string &name, std::string bytes) {
  if (bytes.size() > kMaxMemberBytes) {
    throw UsageError("store entry file " + (entry_dir / name).string() + " is " + std::to_string(bytes.size()) +
                     " bytes: a bundle carries files of at most " + std::to_string(kMaxMemberBytes) + " bytes");
  }
  IndexFile file;
  file.name = name;
  file.size = bytes.size();
  file.mode = mode_of(entry_dir / name);
  file.blake2b = blake2b_hex(bytes);
  carried.entry.files.push_back(std::move(file));
  carried.bytes.push_back(std::move(bytes));
}

// The entry's records and every file meta.json lists, each checked against its recorded
// digest: a damaged entry is refused, never carried to another machine. The build log and a
// build's generated sources (gen/) stay behind: diagnostics of the machine that built it,
// nothing a load reads.
Carried carry(const Resolution &resolution) {
  const fs::path entry_dir(resolution.entry_dir);
  Carried carried;
  carried.entry.consumer = resolution.consumer;
  carried.entry.content_key = resolution.content_key;
  carried.entry.kind = resolution.kind;
  std::string meta_text = files::read_file(entry_dir / store::kMetaFile, files::FileOrigin::store, files::kMaxJsonFileBytes);
  std::string identity_text = files::read_file(entry_dir / store::kIdentityFile, files::FileOrigin::store, files::kMaxJsonFileBytes);
  const store::EntryMeta meta = store::parse_entry_meta(meta_text, entry_dir);
  (void)artifact::parse_artifact_identity(identity_text, (entry_dir / store::kIdentityFile).string());
  if (meta.content_key != resolution.content_key || meta.kind != resolution.kind) {
    throw IntegrityError("store entry " + entry_dir.string() + " records content key " + meta.content_key + " (" +
                         meta.kind + "), not the " + resolution.content_key + " its manifest names: the store is "
                         "damaged; republish or rebuild " + resolution.consumer + "/" + resolution.name +
                         " before exporting it");
  }
  add_file(carried, entry_dir, store::kMetaFile, std::move(meta_text));
  add_file(carried, entry_dir, store::kIdentityFile, std::move(identity_text));
  std::vector<std::pair<std::string, std::string>> files{{meta.file, meta.digest}};
  for (const auto &image : meta.images) files.emplace_back(image.file, image.digest);
  for (const auto &[name, digest] : files) {
    bool listed = false;
    for (const auto &file : carried.entry.files) listed = listed || file.name == name;
    if (listed) continue;  // an images entry may name one file twice (its index, an image)
    std::string bytes = files::read_file(entry_dir / name, files::FileOrigin::store);
    if (files::digest_hex(bytes) != digest) {
      throw IntegrityError("store entry file " + (entry_dir / name).string() + " does not have the digest its meta.json "
                           "records: the entry is damaged; republish or rebuild " + resolution.consumer + "/" +
                           resolution.name + " before exporting it");
    }
    add_file(carried, entry_dir, name, std::move(bytes));
  }
  if (const std::string why = load::entry_file_disagreement(entry_dir, meta); !why.empty()) {
    throw IntegrityError("store entry " + entry_dir.string() + " cannot load: " + why + "; republish or rebuild " +
                         resolution.consumer + "/" + resolution.name + " before exporting it");
  }
  return carried;
}

// The archive, written to an exclusive temp file next to the output and renamed over it once
// complete and fsynced: no reader ever sees a partial bundle at `output`.
class BundleFile {
 public:
  explicit BundleFile(const fs::path &output)
      : output_(output), temp_(output.parent_path() / (files::atomic_temp_prefix(output.filename().string()) + files::unique_suffix())) {
    fd_.reset(::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (fd_.get() < 0) {
      const int error = errno;
      throw IoError("cannot create " + temp_.string() + " to write the bundle " + output_.string() + ": " +
                    std::strerror(error) + support::io_fix(error));
    }
    archive_.reset(archive_write_new());
    if (!archive_) throw std::bad_alloc();
    if (archive_write_set_format_pax_restricted(archive_.get()) != ARCHIVE_OK ||
        archive_write_add_filter_zstd(archive_.get()) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(archive_.get(), 1) != ARCHIVE_OK ||
        archive_write_open_fd(archive_.get(), fd_.get()) != ARCHIVE_OK) {
      fail("cannot start the archive");
    }
  }
  ~BundleFile() {
    if (!temp_.empty()) ::unlink(temp_.c_str());
  }

  void add(const std::string &name, const std::string &bytes, unsigned mode, std::time_t mtime) {
    ArchiveEntry entry(archive_entry_new());
    if (!entry) throw std::bad_alloc();
    archive_entry_set_pathname(entry.get(), name.c_str());
    archive_entry_set_filetype(entry.get(), AE_IFREG);
    archive_entry_set_perm(entry.get(), mode);
    archive_entry_set_size(entry.get(), static_cast<la_int64_t>(bytes.size()));
    archive_entry_set_mtime(entry.get(), mtime, 0);
    if (archive_write_header(archive_.get(), entry.get()) != ARCHIVE_OK) fail("cannot write the header of " + name);
    std::size_t done = 0;
    while (done < bytes.size()) {
      const la_ssize_t wrote = archive_write_data(archive_.get(), bytes.data() + done, bytes.size() - done);
      if (wrote <= 0) fail("cannot write " + name);
      done += static_cast<std::size_t>(wrote);
    }
  }

  std::uint64_t finish() {
    if (archive_write_close(archive_.get()) != ARCHIVE_OK) fail("cannot finish the archive");
    if (::fsync(fd_.get()) != 0) {
      const int error = errno;
      throw IoError("cannot fsync " + temp_.string() + ": " + std::strerror(error) + support::io_fix(error));
    }
    struct stat st {};
    ::fstat(fd_.get(), &st);
    if (::rename(temp_.c_str(), output_.c_str()) != 0) {
      const int error = errno;
      throw IoError("cannot rename " + temp_.string() + " to " + output_.string() + ": " + std::strerror(error) +
                    support::io_fix(error));
    }
    temp_.clear();
    files::fsync_path(output_.parent_path());
    return static_cast<std::uint64_t>(st.st_size);
  }

 private:
  [[noreturn]] void fail(const std::string &what) {
    const int error = archive_errno(archive_.get());
    throw IoError("writing the bundle " + output_.string() + ": " + what + ": " + archive_message(archive_.get()) +
                  (error > 0 ? support::io_fix(error) : std::string()));
  }

  fs::path output_, temp_;
  files::UniqueFd fd_;
  WriteArchive archive_;
};

// The index of `carried` (signed with `key` when given) and their files, into `output`.
void write_carried(const std::vector<Carried> &carried, const fs::path &output, const SecretKey *key,
                   ExportReport &report, std::int64_t created, const std::string &expires = "",
                   const std::string &key_list_text = "") {
  Index index;
  index.created = support::format_utc_time(created);
  index.expires = expires;
  index.kiln_version = kVersion;
  for (const auto &item : carried) {
    index.entries.push_back(item.entry);
    for (const auto &file : item.entry.files) report.content_bytes += file.size;
  }
  const std::string index_text = serialize_index(index);

  const std::time_t now = std::time(nullptr);
  BundleFile file(output);
  file.add(kIndexMember, index_text, 0644, now);
  if (key != nullptr) {
    file.add(kSignatureMember, serialize_signature({key->key_id, key->sign(index_text)}), 0644, now);
    report.signed_by = key->key_id;
  }
  if (!key_list_text.empty()) file.add(kKeyListMember, key_list_text, 0644, now);
  for (const auto &item : carried) {
    for (std::size_t i = 0; i < item.entry.files.size(); ++i) {
      file.add(member_name(item.entry, item.entry.files[i]), item.bytes[i], item.entry.files[i].mode, now);
    }
  }
  report.bundle_bytes = file.finish();
}

}  // namespace

ExportReport write_entry_bundle(const Resolution &resolution, const std::string &output, const std::string &signing_key,
                                std::int64_t lifetime_s) {
  std::optional<SecretKey> key;
  if (!signing_key.empty()) load_secret(key.emplace(), signing_key);
  ExportReport report;
  report.bundle = output;
  std::vector<Carried> carried{carry(resolution)};
  carried.front().entry.records.push_back({resolution.name, resolution.input_key});
  const std::int64_t created = std::time(nullptr);
  report.expires = support::format_utc_time(created + lifetime_s);
  write_carried(carried, fs::path(output), key ? &*key : nullptr, report, created, report.expires);
  return report;
}

ExportReport write_bundle(const store::Storage &storage, const ExportRequest &request, const LogCallback &log) {
  store::validate_name("consumer", request.consumer);
  for (const auto &name : request.names) store::validate_name("artifact name", name);
  if (request.output.empty()) throw UsageError("no bundle file to write: pass -o FILE");
  const fs::path output = fs::absolute(fs::path(request.output));
  if (fs::is_directory(output)) throw UsageError("bundle file " + output.string() + " is a directory: pass -o FILE");
  std::optional<SecretKey> key;  // read first: a bad key is refused before any work
  if (!request.signing_key.empty()) load_secret(key.emplace(), request.signing_key);
  const std::int64_t created = std::time(nullptr);
  const std::string expires = expiry_of(request.expires, created);
  std::string key_list_text;
  std::uint64_t key_list_generation = 0;
  if (!request.key_list.empty()) {
    key_list_text = files::read_file(request.key_list, files::FileOrigin::input, kMaxKeyListBytes);
    const KeyList list = parse_key_list(key_list_text, request.key_list);
    verify_key_list_self(list, request.key_list);
    // A list that would refuse this very bundle helps nobody: say so here, not on the robot.
    const SignerQuery query{
        key ? key->key_id : "", kRoleRelease, {request.consumer}, support::format_utc_time(created)};
    if (!key)
      throw UsageError("--key-list " + request.key_list +
                       " without --sign: a store that follows the list refuses an unsigned bundle; sign it with a key "
                       "the list allows");
    if (const std::string why = signer_refusal(list, query); !why.empty()) {
      throw UsageError("--key-list " + request.key_list + " does not let the signing key sign this bundle: " + why +
                       " (kiln key add, or sign with a key it allows)");
    }
    key_list_generation = list.generation;
  }
  const std::uint64_t release_version =
      request.release_version != 0 ? request.release_version : static_cast<std::uint64_t>(created);

  std::vector<std::string> names = request.names;
  if (names.empty()) {
    for (const auto &summary : storage.list(request.consumer)) {
      if (!summary.shadowed) names.push_back(summary.name);
    }
    if (names.empty()) {
      std::string searched;
      for (const auto &info : storage.infos()) searched += (searched.empty() ? "" : ", ") + info.root;
      throw NotFoundError("consumer " + request.consumer + " has no artifacts in the stores searched (" + searched +
                          "): nothing to export; publish or build one first, or check KILN_STORE_PATH / KILN_CACHE_DIR");
    }
  }

  ExportReport report;
  report.bundle = output.string();
  report.release_version = release_version;
  report.expires = expires;
  report.key_list_generation = key_list_generation;
  std::vector<Carried> carried;
  std::map<std::string, std::size_t> by_key;  // content key -> carried index
  for (const auto &name : names) {
    const auto resolution = storage.resolve(request.consumer, name);
    auto found = by_key.find(resolution->content_key);
    if (found == by_key.end()) {
      found = by_key.emplace(resolution->content_key, carried.size()).first;
      carried.push_back(carry(*resolution));
    }
    Carried &target = carried[found->second];
    bool named = false;
    for (const auto &record : target.entry.records) named = named || record.name == name;
    if (named) continue;  // --name given twice
    target.entry.records.push_back({name, resolution->input_key, release_version});
    std::uint64_t bytes = 0;
    for (const auto &file : target.entry.files) bytes += file.size;
    report.entries.push_back({request.consumer, name, resolution->content_key, resolution->kind, resolution->input_key,
                              bytes, "exported", release_version});
  }
  write_carried(carried, output, key ? &*key : nullptr, report, created, expires, key_list_text);
  if (log) {
    log(LogLevel::info, "exported " + std::to_string(report.entries.size()) + " artifact(s) of " + request.consumer +
                            " to " + output.string() + (key ? ", signed by " + key->key_id : ", unsigned"));
  }
  return report;
}

}  // namespace kiln::bundle
