// The generation table's file, <writable cache>/swap/generations: opened, checked, replaced when
// damaged or foreign, and mapped MAP_SHARED. It knows the file's header and size, not what the
// table keeps after the header (generations.cpp).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <kiln/log.hpp>

namespace kiln::swap {

// The file's first words: what it is and the shape it was made with.
struct GenerationsHeader {
  std::atomic<std::uint64_t> magic, layout, slots, records, size, reserved[3];
};

// The shape the table expects; a file made with another one is replaced.
struct GenerationsShape {
  std::uint64_t layout_version = 0;
  std::uint64_t slots = 0;
  std::uint64_t records = 0;
  std::size_t bytes = 0;  // the whole file, header included
};

class GenerationsFile {
 public:
  // Opens <cache_dir>/swap/generations, creating it (or replacing one that is not trusted: a
  // symlink, FIFO, another owner, group/other-writable, another size, magic or shape) and maps
  // it. IoError when that cannot be done.
  static std::unique_ptr<GenerationsFile> open(const std::string &cache_dir, const GenerationsShape &shape,
                                               const LogCallback &log);
  ~GenerationsFile();
  GenerationsFile(const GenerationsFile &) = delete;
  GenerationsFile &operator=(const GenerationsFile &) = delete;

  const std::string &path() const noexcept { return path_; }
  // The mapping: shape.bytes, starting with the GenerationsHeader.
  void *base() const noexcept { return base_; }
  // False once another process replaced the file mapped here. One stat call.
  bool current() const noexcept;

 private:
  GenerationsFile() = default;
  std::string path_;
  void *base_ = nullptr;
  std::size_t bytes_ = 0;
  dev_t device_ = 0;
  ino_t inode_ = 0;
};

// Logs when `log` is set; a throwing callback is ignored (the table's callers are noexcept).
void safe_log(const LogCallback &log, LogLevel level, const std::string &line) noexcept;

}  // namespace kiln::swap
