#include "files/digest.hpp"
#include "files/unique_fd.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <kiln/errors.hpp>

#include "files/files.hpp"

namespace kiln::files {
namespace {

std::string to_hex(XXH128_hash_t hash) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, hash);
  static const char *digits = "0123456789abcdef";
  std::string out(32, '0');
  for (std::size_t i = 0; i < 16; ++i) {
    out[2 * i] = digits[canonical.digest[i] >> 4];
    out[2 * i + 1] = digits[canonical.digest[i] & 15];
  }
  return out;
}

// open_regular (no hang on a FIFO, no endless /dev/zero), keeping this file's contract that a
// missing file is an IoError too.
int open_to_hash(const boost::filesystem::path &file, FileOrigin origin) {
  try {
    return open_regular(file, origin);
  } catch (const NotFoundError &) {
    throw_io("cannot open", file, ENOENT);
  }
}

}  // namespace

struct Hasher::State {
  XXH3_state_t *xxh = XXH3_createState();
  ~State() { XXH3_freeState(xxh); }
};

Hasher::Hasher() : state_(std::make_unique<State>()) {
  if (state_->xxh == nullptr) throw std::bad_alloc();
  XXH3_128bits_reset(state_->xxh);
}
Hasher::~Hasher() = default;
Hasher::Hasher(Hasher &&) noexcept = default;
Hasher &Hasher::operator=(Hasher &&) noexcept = default;

Hasher &Hasher::update(const void *data, std::size_t size) {
  XXH3_128bits_update(state_->xxh, data, size);
  return *this;
}

Hasher &Hasher::add_field(std::string_view name, std::string_view value) {
  const std::uint64_t name_size = name.size(), value_size = value.size();
  update(&name_size, sizeof name_size).update(name);
  return update(&value_size, sizeof value_size).update(value);
}

Hasher &Hasher::add_list(std::string_view name, const std::vector<std::string> &items) {
  add_field(name, std::to_string(items.size()));
  for (const auto &item : items) add_field(name, item);
  return *this;
}

Hasher &Hasher::add_file(const boost::filesystem::path &file) {
  UniqueFd fd(open_to_hash(file, FileOrigin::input));
  return add_fd(fd.get(), file);
}

Hasher &Hasher::add_fd(int fd, const boost::filesystem::path &name_for_errors) {
  // One uninitialised buffer per thread: key computation hashes many small files, and
  // allocating (and zeroing) a fresh buffer per file dominated an unchanged ensure.
  constexpr std::size_t kBufferSize = 1 << 20;
  thread_local std::unique_ptr<char[]> buffer(new char[kBufferSize]);
  for (;;) {
    const ssize_t got = ::read(fd, buffer.get(), kBufferSize);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw_io("cannot read", name_for_errors, errno);
    }
    if (got == 0) break;
    update(buffer.get(), static_cast<std::size_t>(got));
  }
  return *this;
}

std::string Hasher::hex() const { return to_hex(XXH3_128bits_digest(state_->xxh)); }

std::string digest_hex(const void *data, std::size_t size) { return to_hex(XXH3_128bits(data, size)); }

std::string digest_fd(int fd, const boost::filesystem::path &name_for_errors) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw_io("cannot stat", name_for_errors, errno);
  const auto size = static_cast<std::size_t>(info.st_size);
  if (size == 0) return digest_hex("", 0);
  // One mapping, hashed in place: the pages are the ones dlopen maps next, so a warm load
  // reads the file once.
  // MAP_POPULATE: fault the pages in one call rather than one fault per page.
  void *map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
  if (map == MAP_FAILED) throw_io("cannot map", name_for_errors, errno);
  const std::string hex = digest_hex(map, size);
  ::munmap(map, size);
  return hex;
}

std::string digest_file(const boost::filesystem::path &file) {
  UniqueFd fd(open_to_hash(file, FileOrigin::store));
  return digest_fd(fd.get(), file);
}

}  // namespace kiln::files
