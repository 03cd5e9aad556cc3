// Ed25519 key files (libsodium) for signing bundles: PATH.key (secret, mode 0600) and PATH.pub.
//
// Both are three text lines -- a header naming the format, the key id, the key in lower-case
// hex -- so a person can tell them apart and see which public key a bundle names:
//   kiln-ed25519-secret-key v1          kiln-ed25519-public-key v1
//   key-id 1f0e...(16 hex digits)       key-id 1f0e...
//   secret <128 hex digits>             public <64 hex digits>
// The key id is the first 8 bytes of the BLAKE2b-256 of the public key.
#pragma once

#include <string>
#include <string_view>

#include <sodium.h>

#include <kiln/bundle.hpp>

namespace kiln::bundle {

struct PublicKey {
  std::string file;
  std::string key_id;
  unsigned char key[crypto_sign_PUBLICKEYBYTES] = {};
};

// The secret half, wiped from memory when destroyed.
class SecretKey {
 public:
  SecretKey() = default;
  ~SecretKey() { sodium_memzero(key_, sizeof key_); }
  SecretKey(const SecretKey &) = delete;
  SecretKey &operator=(const SecretKey &) = delete;

  std::string file;
  std::string key_id;
  // The detached signature (64 bytes) over `message`.
  std::string sign(std::string_view message) const;

 private:
  friend void load_secret(SecretKey &key, const std::string &file);
  unsigned char key_[crypto_sign_SECRETKEYBYTES] = {};
};

std::string key_id_of(const unsigned char (&public_key)[crypto_sign_PUBLICKEYBYTES]);

// Reads PATH.key. Refused (UsageError naming the file and the fix): a file that is not a
// regular file (a symlink included), readable or writable by group or others, or not a kiln
// secret key; NotFoundError when absent.
void load_secret(SecretKey &key, const std::string &file);
// Reads PATH.pub (UsageError when it is not a kiln public key; NotFoundError when absent).
PublicKey read_public_key(const std::string &file);
// The text of a PATH.pub holding `key`.
std::string public_key_text(const PublicKey &key);

// Whether `signature` (64 bytes) is `key`'s over `message`.
bool verify(const PublicKey &key, std::string_view message, std::string_view signature);

}  // namespace kiln::bundle
