// Bounded reads of binary formats kiln parses from untrusted files (fat binaries, device
// images): the overflow-safe range check and an unaligned little-endian read, shared so each
// parser checks ranges the same way.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

namespace kiln::artifact {

// The magic a CUDA fat binary container starts with.
inline constexpr std::uint32_t kFatbinMagic = 0xBA55ED50u;

// Overflow-safe "offset + size <= total".
inline bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

// A T at `offset`; the caller proved inside(offset, sizeof(T), bytes.size()).
template <class T>
T read_at(std::string_view bytes, std::uint64_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

}  // namespace kiln::artifact
