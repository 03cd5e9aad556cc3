#include "builder/abi_headers.hpp"

#include <cstdlib>
#include <ctime>
#include <string_view>

#include <boost/filesystem/operations.hpp>

#include "builder/keys.hpp"
#include "store/digest.hpp"
#include "store/files.hpp"
#include "store/remove_tree.hpp"
#include "store/safety.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

bool copy_matches(const fs::path &dir) {
  for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
    const fs::path path = dir / file->path;
    boost::system::error_code error;
    if (fs::file_size(path, error) != file->size || error) return false;
    if (store::digest_file(path) != store::digest_hex(file->bytes, file->size)) return false;
  }
  return true;
}

// What writers left in <cache>/abi: a killed writer's staging copy (a minute old: no writer
// takes that long) and copies moved aside as damaged (a day old: a compile may have been reading
// one). Swept when a copy is written, i.e. at a kiln upgrade's first build or after a crash.
void sweep_leftovers(const fs::path &abi_root) {
  const std::time_t now = std::time(nullptr);
  boost::system::error_code error;
  for (fs::directory_iterator it(abi_root, error), end; !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    const bool staging = name.rfind(".staging-", 0) == 0, damaged = name.rfind(".damaged-", 0) == 0;
    if (!staging && !damaged) continue;
    boost::system::error_code ignored;
    const std::time_t modified = fs::last_write_time(it->path(), ignored);
    if (!ignored && now - modified > (staging ? 60 : 24 * 3600)) store::remove_tree(it->path());
  }
}

void write_copy(const fs::path &dir) {
  const fs::path staging = dir.parent_path() / (".staging-" + dir.filename().string() + "-" + store::unique_suffix());
  for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
    const fs::path path = staging / file->path;
    store::create_directories(path.parent_path());
    store::write_staging_file(path, std::string_view(file->bytes, file->size), 0444);
  }
  boost::system::error_code error;
  if (fs::exists(dir, error)) {  // damaged: moved aside, not deleted under a reader
    fs::rename(dir, dir.parent_path() / (".damaged-" + dir.filename().string() + "-" + store::unique_suffix()), error);
  }
  fs::rename(staging, dir, error);
  if (error && !copy_matches(dir)) {  // another process's identical copy won the rename: fine
    store::throw_io("writing the ABI headers", dir, error.value());
  }
  store::remove_tree(staging);
}

}  // namespace

const std::string &embedded_abi_digest() {
  static const std::string digest = [] {
    std::vector<std::pair<std::string, std::string>> files;
    for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
      files.emplace_back(file->path, store::digest_hex(file->bytes, file->size));
    }
    return abi_files_digest(files);
  }();
  return digest;
}

AbiHeaders abi_headers_for(const fs::path &cache_root) {
  if (const char *dir = ::secure_getenv("KILN_ABI_DIR"); dir != nullptr && *dir != '\0') return {dir, false};
  const std::string dir = (cache_root / "abi" / embedded_abi_digest()).string();
  remember_abi_digest(dir, embedded_abi_digest());
  return {dir, true};
}

void write_embedded_abi(const std::string &dir) {
  if (copy_matches(dir)) return;  // a few small files: the copy is what the compiler reads
  const fs::path abi_root = fs::path(dir).parent_path();
  store::create_directories(abi_root);
  store::check_safe_to_write(abi_root, abi_root.parent_path());  // <cache>/abi and the cache
  sweep_leftovers(abi_root);
  write_copy(dir);
}

}  // namespace kiln::builder
