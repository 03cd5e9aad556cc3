#include "load/verify.hpp"

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <string_view>
#include <tuple>

#include <kiln/errors.hpp>

#include "artifact/elf.hpp"
#include "artifact/plugin_file.hpp"
#include "artifact/stamp.hpp"
#include "files/digest.hpp"
#include "files/file_identity.hpp"
#include "files/safety.hpp"

namespace kiln::load {
namespace {

// Files this process already checked (digest and stamp), by their identity (device, inode,
// size, mtime, ctime). Any write to a file changes its ctime and forces a fresh check; store
// files are never modified in place.
class VerifiedFiles {
 public:
  bool known(const files::FileIdentity &id, const std::string &digest, const std::string &content_key) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto hit = verified_.find({id.device, id.inode});
    return hit != verified_.end() && hit->second.id == id && hit->second.digest == digest &&
           hit->second.content_key == content_key;
  }
  void remember(const files::FileIdentity &id, const std::string &digest, const std::string &content_key) {
    std::lock_guard<std::mutex> lock(mutex_);
    verified_[{id.device, id.inode}] = {id, digest, content_key};
  }

 private:
  struct Checked {
    files::FileIdentity id;
    std::string digest;
    std::string content_key;
  };
  std::mutex mutex_;
  std::map<std::pair<std::uint64_t, std::uint64_t>, Checked> verified_;
};

VerifiedFiles &verified_files() {
  static VerifiedFiles files;
  return files;
}

// One read-only mapping of the descriptor: hashed and searched in place, and its pages are the
// ones dlopen maps next, so a cold load reads the file once.
class Mapping {
 public:
  Mapping(int fd, std::uint64_t size, const std::string &file) : size_(static_cast<std::size_t>(size)) {
    if (size_ == 0) return;
    // MAP_POPULATE: fault the pages in one call rather than one fault per page.
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      throw IoError("cannot map " + file + ": " + std::strerror(errno));
    }
  }
  ~Mapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  Mapping(const Mapping &) = delete;
  Mapping &operator=(const Mapping &) = delete;
  std::string_view bytes() const { return {static_cast<const char *>(data_), size_}; }

 private:
  void *data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace

void verify_before_dlopen(int fd, const files::FileIdentity &id, const Resolution &resolution,
                          const store::VerificationRecords *records, const LogCallback &log) {
  if (verified_files().known(id, resolution.digest, resolution.content_key)) return;
  files::check_directories(resolution.file, resolution.store_root);
  if (records != nullptr && records->vouches(resolution.content_key, id, resolution.digest)) {
    verified_files().remember(id, resolution.digest, resolution.content_key);
    return;
  }
  const Mapping mapping(fd, id.size, resolution.file);
  const std::string_view bytes = mapping.bytes();
  const std::string actual = files::digest_hex(bytes);
  if (actual != resolution.digest) {
    throw IntegrityError("artifact " + resolution.consumer + "/" + resolution.name + " file " + resolution.file +
                         " does not match its recorded digest (recorded " + resolution.digest + ", file " + actual +
                         "): it is torn or was altered, and was not loaded; republish or rebuild it");
  }
  const artifact::FileStamp stamp = artifact::stamp_of(bytes, resolution.file);
  artifact::check_stamp_abi(stamp, resolution.file);
  if (stamp.content_key != resolution.content_key) {
    throw IntegrityError("plugin " + resolution.file + " carries build stamp " + stamp.content_key +
                         " but its manifest entry " + resolution.consumer + "/" + resolution.name +
                         " names content key " + resolution.content_key +
                         ": the file does not belong to this entry and was not loaded (none of its code ran); "
                         "republish or rebuild the artifact");
  }
  verified_files().remember(id, actual, resolution.content_key);
  if (records != nullptr) records->remember(resolution.content_key, id, actual, log);
}

}  // namespace kiln::load
