#include "load/stamp.hpp"

#include <cstddef>
#include <cstring>

#include <kiln/errors.hpp>
#include <kiln/stamp.h>

namespace kiln::load {
namespace {

constexpr std::string_view kMagic(KILN_STAMP_MAGIC, KILN_STAMP_MAGIC_SIZE);

std::string c_string_field(const std::string &bytes, std::size_t at, std::size_t size) {
  const std::string raw = bytes.substr(at, size);
  return raw.substr(0, raw.find('\0'));
}

}  // namespace

FileStamp find_stamp(const std::string &bytes, const std::string &file) {
  const std::size_t first = bytes.find(kMagic);
  if (first == std::string::npos) {
    throw AbiError(file + " is not a kiln plugin: it holds no kiln build stamp; build it with the KILN_PLUGIN macro "
                          "of <kiln/plugin.hpp> (or define a kiln_build_stamp as abi/kiln/stamp.h describes)");
  }
  if (bytes.find(kMagic, first + 1) != std::string::npos) {
    throw AbiError(file + " holds more than one kiln build stamp (two plugins linked into one file?): link exactly "
                          "one KILN_PLUGIN per shared object");
  }
  if (first + sizeof(kiln_build_stamp) > bytes.size()) {
    throw AbiError(file + ": its kiln build stamp is cut off at the end of the file; the file is truncated");
  }
  kiln_build_stamp record;
  std::memcpy(&record, bytes.data() + first, sizeof record);
  if (record.struct_size < sizeof(kiln_build_stamp)) {
    throw AbiError(file + ": its kiln build stamp is " + std::to_string(record.struct_size) + " bytes, expected " +
                   std::to_string(sizeof(kiln_build_stamp)) + "; rebuild it against this kiln's abi/ headers");
  }
  FileStamp stamp;
  stamp.offset = first;
  stamp.abi_version = record.abi_version;
  stamp.content_key = c_string_field(bytes, first + offsetof(kiln_build_stamp, content_key), KILN_STAMP_KEY_SIZE);
  stamp.archs = c_string_field(bytes, first + offsetof(kiln_build_stamp, archs), KILN_STAMP_ARCHS_SIZE);
  return stamp;
}

void write_stamp_key(std::string &bytes, const FileStamp &stamp, const std::string &key) {
  if (key.size() != KILN_STAMP_KEY_SIZE) throw AbiError("stamp key must be 32 characters, got \"" + key + "\"");
  bytes.replace(stamp.offset + offsetof(kiln_build_stamp, content_key), key.size(), key);
}

}  // namespace kiln::load
