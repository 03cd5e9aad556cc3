// XXH3-128 digests and keys (lower-case hex), streaming.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::files {

// Streaming XXH3-128. Fields of a key are added with add_field so that ("ab","c") and
// ("a","bc") never collide: each field is length-prefixed.
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(Hasher &&) noexcept;
  Hasher &operator=(Hasher &&) noexcept;

  Hasher &update(const void *data, std::size_t size);
  Hasher &update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  Hasher &add_field(std::string_view name, std::string_view value);
  // A list (a command line) as its length and then each item as a field: ["-DA=1 -DB=2"] and
  // ["-DA=1", "-DB=2"] never collide, as they would joined by spaces.
  Hasher &add_list(std::string_view name, const std::vector<std::string> &items);
  // Appends the bytes of a regular file (streamed); a FIFO or device is refused (UsageError),
  // I/O errors and a missing file are IoError; all name the path.
  Hasher &add_file(const boost::filesystem::path &file);
  // Appends what is left to read from a descriptor (read(2), so EIO is an IoError, not the
  // SIGBUS a mapping would raise).
  Hasher &add_fd(int fd, const boost::filesystem::path &name_for_errors);
  std::string hex() const;  // 32 lower-case hex digits

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string digest_hex(const void *data, std::size_t size);
inline std::string digest_hex(std::string_view bytes) { return digest_hex(bytes.data(), bytes.size()); }

// Digest of a file's bytes, read through a descriptor (so the caller can hash exactly the
// inode it will then load). Throws IoError naming the path; digest_file refuses a file that is
// not regular (IntegrityError: it hashes store files).
std::string digest_file(const boost::filesystem::path &file);
std::string digest_fd(int fd, const boost::filesystem::path &name_for_errors);

}  // namespace kiln::files
