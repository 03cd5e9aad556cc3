// BLAKE2b (libsodium crypto_generichash): the cryptographic hash a bundle's signature binds to
// every byte it carries (XXH3, the store's digest, is fast but not collision-resistant).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <sodium.h>

namespace kiln::bundle {

inline constexpr std::size_t kHashBytes = 32;  // BLAKE2b-256: 64 hex digits

// Streaming BLAKE2b-256.
class Blake2b {
 public:
  Blake2b();
  Blake2b &update(const void *data, std::size_t size);
  Blake2b &update(std::string_view bytes) { return update(bytes.data(), bytes.size()); }
  std::string hex();  // once: finishes the hash

 private:
  crypto_generichash_state state_;
};

std::string blake2b_hex(std::string_view bytes);

// Lower-case hex of bytes, and back (nullopt-like: false for anything but 2*size hex digits).
std::string to_hex(const unsigned char *data, std::size_t size);
bool from_hex(std::string_view hex, unsigned char *out, std::size_t size);

// libsodium's one-time initialisation (thread-safe, idempotent); IoError when it fails.
void init_sodium();

}  // namespace kiln::bundle
