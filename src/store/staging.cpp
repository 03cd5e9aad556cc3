#include "store/staging.hpp"

#include <boost/filesystem/operations.hpp>

#include "store/files.hpp"
#include "store/layout.hpp"

namespace kiln::store {

Staging::Staging(std::string consumer, boost::filesystem::path dir)
    : consumer_(std::move(consumer)), dir_(std::move(dir)) {}

Staging::Staging(Staging &&other) noexcept
    : consumer_(std::move(other.consumer_)), dir_(std::move(other.dir_)), meta_(std::move(other.meta_)) {
  other.dir_.clear();
}

Staging &Staging::operator=(Staging &&other) noexcept {
  if (this != &other) {
    Staging discarded(std::move(*this));
    consumer_ = std::move(other.consumer_);
    dir_ = std::move(other.dir_);
    meta_ = std::move(other.meta_);
    other.dir_.clear();
  }
  return *this;
}

Staging::~Staging() {
  if (dir_.empty()) return;
  boost::system::error_code ignored;
  boost::filesystem::remove_all(dir_, ignored);
}

void Staging::write(const std::string &name, std::string_view bytes, unsigned mode) const {
  write_staging_file(dir_ / name, bytes, mode);
}

void Staging::write_records(const EntryMeta &meta, const std::string &identity_json) {
  write_staging_file(dir_ / kMetaFile, serialize_entry_meta(meta));
  write_staging_file(dir_ / kIdentityFile, identity_json);
  meta_ = meta;
}

}  // namespace kiln::store
