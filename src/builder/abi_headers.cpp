#include "builder/abi_headers.hpp"

#include <cstdlib>
#include <string_view>

#include <boost/filesystem/operations.hpp>

#include "builder/keys.hpp"
#include "files/digest.hpp"
#include "files/files.hpp"
#include "files/remove_tree.hpp"
#include "files/safety.hpp"
#include "store/sweep.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

bool copy_matches(const fs::path &dir) {
  for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
    const fs::path path = dir / file->path;
    boost::system::error_code error;
    if (fs::file_size(path, error) != file->size || error) return false;
    if (files::digest_file(path) != files::digest_hex(file->bytes, file->size)) return false;
  }
  return true;
}

void write_copy(const fs::path &dir) {
  const fs::path staging = dir.parent_path() / (".staging-" + dir.filename().string() + "-" + files::unique_suffix());
  try {
    for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
      const fs::path path = staging / file->path;
      files::create_directories(path.parent_path());
      files::write_staging_file(path, std::string_view(file->bytes, file->size), 0444);
    }
    boost::system::error_code error;
    if (fs::exists(dir, error)) {
      // Another process's whole copy may have been renamed in since this one found none: that
      // is not damage. Only a copy that does not match is moved aside (never deleted under a
      // reader; the sweep removes it later).
      if (copy_matches(dir)) {
        files::remove_tree(staging);
        return;
      }
      fs::rename(dir, dir.parent_path() / (".damaged-" + dir.filename().string() + "-" + files::unique_suffix()), error);
    }
    fs::rename(staging, dir, error);
    if (error && !copy_matches(dir)) {  // another process's identical copy won the rename: fine
      files::throw_io("writing the ABI headers", dir, error.value());
    }
  } catch (...) {
    files::remove_tree(staging);  // a full disk or a failed rename leaves no partial copy behind
    throw;
  }
  files::remove_tree(staging);
}

}  // namespace

const std::string &embedded_abi_digest() {
  static const std::string digest = [] {
    std::vector<std::pair<std::string, std::string>> files;
    for (const EmbeddedFile *file = embedded_abi_begin(); file != embedded_abi_end(); ++file) {
      files.emplace_back(file->path, files::digest_hex(file->bytes, file->size));
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
  const fs::path abi_root = fs::path(dir).parent_path();
  files::create_directories(abi_root);
  files::check_safe_to_write(abi_root, abi_root.parent_path());  // <cache>/abi and the cache
  // Swept before every compile, not only when a copy is written: a copy written after a failed
  // one would otherwise leave the failed one's staging behind for good.
  store::sweep_abi_leftovers(abi_root);
  if (copy_matches(dir)) return;  // a few small files: the copy is what the compiler reads
  write_copy(dir);
}

}  // namespace kiln::builder
