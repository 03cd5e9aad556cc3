#include "bundle/hash.hpp"

#include <kiln/errors.hpp>

namespace kiln::bundle {

void init_sodium() {
  if (sodium_init() < 0) throw IoError("libsodium failed to initialise (no entropy source?): cannot sign or verify bundles");
}

Blake2b::Blake2b() {
  init_sodium();
  crypto_generichash_init(&state_, nullptr, 0, kHashBytes);
}

Blake2b &Blake2b::update(const void *data, std::size_t size) {
  crypto_generichash_update(&state_, static_cast<const unsigned char *>(data), size);
  return *this;
}

std::string Blake2b::hex() {
  unsigned char out[kHashBytes];
  crypto_generichash_final(&state_, out, sizeof out);
  return to_hex(out, sizeof out);
}

std::string blake2b_hex(std::string_view bytes) { return Blake2b().update(bytes).hex(); }

std::string to_hex(const unsigned char *data, std::size_t size) {
  static const char digits[] = "0123456789abcdef";
  std::string text(size * 2, '0');
  for (std::size_t i = 0; i < size; ++i) {
    text[2 * i] = digits[data[i] >> 4];
    text[2 * i + 1] = digits[data[i] & 15];
  }
  return text;
}

bool from_hex(std::string_view hex, unsigned char *out, std::size_t size) {
  if (hex.size() != size * 2) return false;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < size; ++i) {
    const int high = nibble(hex[2 * i]), low = nibble(hex[2 * i + 1]);
    if (high < 0 || low < 0) return false;
    out[i] = static_cast<unsigned char>(high << 4 | low);
  }
  return true;
}

}  // namespace kiln::bundle
