#include "artifact/stamp.hpp"

#include <string.h>  // memmem

#include <algorithm>
#include <cstddef>
#include <cstring>

#include <kiln/errors.hpp>
#include <kiln/stamp.h>

#include "artifact/abi_layout.hpp"

namespace kiln::artifact {
namespace {

constexpr std::string_view kMagic(KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE);

std::string c_string_field(std::string_view bytes, std::size_t at, std::size_t size) {
  const std::string_view raw = bytes.substr(at, size);
  return std::string(raw.substr(0, raw.find('\0')));
}

// memmem: this runs over every byte of a plugin on a cold load, and glibc's is the fastest search.
std::size_t find_magic(std::string_view bytes, std::size_t from) {
  if (from >= bytes.size()) return std::string_view::npos;
  const void *hit = ::memmem(bytes.data() + from, bytes.size() - from, kMagic.data(), kMagic.size());
  return hit == nullptr ? std::string_view::npos : static_cast<std::size_t>(static_cast<const char *>(hit) - bytes.data());
}

}  // namespace

FileStamp find_stamp(std::string_view bytes, const std::string &file) {
  const std::size_t first = find_magic(bytes, 0);
  if (first == std::string_view::npos) {
    throw AbiError(file + " is not a kiln plugin: it holds no kiln build stamp; build it with the KILN_PLUGIN macro "
                          "of <kiln/plugin.hpp> (or define a kiln_build_stamp as abi/kiln/stamp.h describes)");
  }
  if (find_magic(bytes, first + 1) != std::string_view::npos) {
    throw AbiError(file + " holds more than one kiln build stamp (two plugins linked into one file?): link exactly "
                          "one KILN_PLUGIN per shared object");
  }
  return *stamp_at(bytes, first, file);
}

std::optional<FileStamp> stamp_at(std::string_view bytes, std::size_t offset, const std::string &file) {
  if (offset > bytes.size() || bytes.substr(offset, kMagic.size()) != kMagic) return std::nullopt;
  if (bytes.size() - offset < kMinStampSize) {
    throw AbiError(file + ": its kiln build stamp is cut off at the end of the file; the file is truncated");
  }
  // Fields past the stamp's own struct_size (or past the file) read as absent (zero).
  kiln_build_stamp record{};
  std::memcpy(&record, bytes.data() + offset, std::min(sizeof record, bytes.size() - offset));
  if (record.struct_size < kMinStampSize) {
    throw AbiError(file + ": its kiln build stamp is " + std::to_string(record.struct_size) + " bytes, ABI 1.0 defines " +
                   std::to_string(kMinStampSize) + "; rebuild it against this kiln's abi/ headers");
  }
  FileStamp stamp;
  stamp.offset = offset;
  stamp.abi_version = record.abi_version;
  stamp.content_key = c_string_field(bytes, offset + offsetof(kiln_build_stamp, content_key), KILN_STAMP_KEY_SIZE);
  stamp.archs = c_string_field(bytes, offset + offsetof(kiln_build_stamp, archs), KILN_STAMP_ARCHS_SIZE);
  return stamp;
}

void write_stamp_key(std::string &bytes, const FileStamp &stamp, const std::string &key) {
  if (key.size() != KILN_STAMP_KEY_SIZE) throw AbiError("stamp key must be 32 characters, got \"" + key + "\"");
  bytes.replace(stamp.offset + offsetof(kiln_build_stamp, content_key), key.size(), key);
}

}  // namespace kiln::artifact
