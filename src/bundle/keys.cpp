#include "bundle/keys.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iterator>
#include <algorithm>
#include <vector>

#include <kiln/errors.hpp>

#include "bundle/hash.hpp"
#include "files/files.hpp"
#include "files/trusted_file.hpp"
#include "files/unique_fd.hpp"
#include "support/typed_errors.hpp"

namespace kiln::bundle {

inline constexpr const char *kSecretHeader = "kiln-ed25519-secret-key v1";
inline constexpr const char *kPublicHeader = "kiln-ed25519-public-key v1";
constexpr std::size_t kMaxKeyFileBytes = 4096;

static std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return lines;
}

// "<label> <value>" -> value, or "" when the line is something else.
static std::string field(const std::vector<std::string> &lines, std::size_t index, const std::string &label) {
  if (index >= lines.size() || lines[index].rfind(label + " ", 0) != 0) return "";
  return lines[index].substr(label.size() + 1);
}

// Creates `file` exclusively (never following a symlink, never replacing anything), writes
// `text` and fsyncs it.
static void write_new_file(const std::string &file, const std::string &text, mode_t mode) {
  files::UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
  if (fd.get() < 0) {
    const int error = errno;
    if (error == EEXIST) throw UsageError(file + " already exists: kiln never overwrites a key; choose another -o PATH");
    throw IoError("cannot create " + file + ": " + std::strerror(error) + support::io_fix(error));
  }
  const auto fail = [&](int error) {
    ::unlink(file.c_str());
    throw IoError("cannot write " + file + ": " + std::strerror(error) + support::io_fix(error));
  };
  if (::fchmod(fd.get(), mode) != 0) fail(errno);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t wrote = ::write(fd.get(), text.data() + done, text.size() - done);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) fail(wrote < 0 ? errno : EIO);
    done += static_cast<std::size_t>(wrote);
  }
  if (::fsync(fd.get()) != 0) fail(errno);
}

// Both halves follow kiln.conf's rule (files/trusted_file.hpp: yours or root's, not writable by
// others; no symlink), checked on the descriptor the bytes are read from; the secret half is
// also unreadable by others.
static std::string read_key_file(const std::string &file, bool secret) {
  struct stat st {};
  std::string text;
  try {
    text = files::read_trusted_file(file, secret ? "secret key" : "key file", kMaxKeyFileBytes, false, &st);
  } catch (const NotFoundError &) {
    throw NotFoundError("key file " + file + " does not exist: create a key pair with kiln keygen -o PATH");
  }
  if (secret && (st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw UsageError("secret key " + file + " is accessible by group or others (mode " + mode +
                     "): anyone who can read it can sign bundles as you; run chmod 600 " + file +
                     " (and make a new key pair if others may have read it)");
  }
  return text;
}

std::string key_id_of(const unsigned char (&public_key)[crypto_sign_PUBLICKEYBYTES]) {
  return Blake2b().update(public_key, sizeof public_key).hex().substr(0, 16);
}

std::string SecretKey::sign(std::string_view message) const {
  unsigned char signature[crypto_sign_BYTES];
  crypto_sign_detached(signature, nullptr, reinterpret_cast<const unsigned char *>(message.data()), message.size(), key_);
  return std::string(reinterpret_cast<const char *>(signature), sizeof signature);
}

void load_secret(SecretKey &key, const std::string &file) {
  init_sodium();
  const std::string text = read_key_file(file, true);
  const auto lines = lines_of(text);
  const auto bad = [&](const std::string &why) -> void {
    throw UsageError(file + " is not a kiln secret key (" + why + "): pass the PATH.key kiln keygen wrote");
  };
  if (lines.empty() || lines[0] != kSecretHeader) bad("its first line is not \"" + std::string(kSecretHeader) + "\"");
  const std::string id = field(lines, 1, "key-id");
  if (!from_hex(field(lines, 2, "secret"), key.key_, sizeof key.key_)) bad("no \"secret\" line of 128 hex digits");
  unsigned char public_key[crypto_sign_PUBLICKEYBYTES];
  crypto_sign_ed25519_sk_to_pk(public_key, key.key_);
  unsigned char seed[crypto_sign_SEEDBYTES], check_pk[crypto_sign_PUBLICKEYBYTES], check_sk[crypto_sign_SECRETKEYBYTES];
  crypto_sign_ed25519_sk_to_seed(seed, key.key_);
  crypto_sign_seed_keypair(check_pk, check_sk, seed);
  const bool consistent = sodium_memcmp(check_sk, key.key_, sizeof check_sk) == 0;
  sodium_memzero(seed, sizeof seed);
  sodium_memzero(check_sk, sizeof check_sk);
  if (!consistent) bad("its public half does not match its seed");
  key.key_id = key_id_of(public_key);
  if (id != key.key_id) bad("its key-id line does not match the key");
  key.file = file;
}

PublicKey read_public_key(const std::string &file) {
  init_sodium();
  const auto lines = lines_of(read_key_file(file, false));
  const auto bad = [&](const std::string &why) -> void {
    throw UsageError(file + " is not a kiln public key (" + why + "): pass the PATH.pub kiln keygen wrote");
  };
  if (lines.empty() || lines[0] != kPublicHeader) {
    bad(lines.size() > 0 && lines[0] == kSecretHeader ? "it is a SECRET key: trust the .pub file, and keep the .key private"
                                                      : "its first line is not \"" + std::string(kPublicHeader) + "\"");
  }
  PublicKey key;
  if (!from_hex(field(lines, 2, "public"), key.key, sizeof key.key)) bad("no \"public\" line of 64 hex digits");
  key.key_id = key_id_of(key.key);
  if (field(lines, 1, "key-id") != key.key_id) bad("its key-id line does not match the key");
  key.file = file;
  return key;
}

std::string public_key_text(const PublicKey &key) {
  return std::string(kPublicHeader) + "\nkey-id " + key.key_id + "\npublic " + to_hex(key.key, sizeof key.key) + "\n";
}

bool verify(const PublicKey &key, std::string_view message, std::string_view signature) {
  if (signature.size() != crypto_sign_BYTES) return false;
  return crypto_sign_verify_detached(reinterpret_cast<const unsigned char *>(signature.data()),
                                     reinterpret_cast<const unsigned char *>(message.data()), message.size(),
                                     key.key) == 0;
}

}  // namespace kiln::bundle

namespace kiln {

KeyPair generate_keypair(const std::string &path_prefix) try {
  if (path_prefix.empty()) throw UsageError("kiln keygen: -o PATH is empty: name where PATH.key and PATH.pub go");
  bundle::init_sodium();
  KeyPair pair;
  pair.secret_file = path_prefix + ".key";
  pair.public_file = path_prefix + ".pub";
  for (const auto &file : {pair.secret_file, pair.public_file}) {
    struct stat st {};
    if (::lstat(file.c_str(), &st) == 0) {
      throw UsageError(file + " already exists: kiln never overwrites a key; choose another -o PATH");
    }
  }
  unsigned char public_key[crypto_sign_PUBLICKEYBYTES], secret_key[crypto_sign_SECRETKEYBYTES];
  crypto_sign_keypair(public_key, secret_key);
  pair.key_id = bundle::key_id_of(public_key);
  std::string secret_text = std::string(bundle::kSecretHeader) + "\nkey-id " + pair.key_id + "\nsecret " +
                            bundle::to_hex(secret_key, sizeof secret_key) + "\n";
  sodium_memzero(secret_key, sizeof secret_key);
  bundle::PublicKey pub;
  std::copy(std::begin(public_key), std::end(public_key), std::begin(pub.key));
  pub.key_id = pair.key_id;
  const std::string public_text = bundle::public_key_text(pub);
  try {
    bundle::write_new_file(pair.secret_file, secret_text, 0600);
  } catch (...) {
    sodium_memzero(secret_text.data(), secret_text.size());
    throw;
  }
  sodium_memzero(secret_text.data(), secret_text.size());
  try {
    bundle::write_new_file(pair.public_file, public_text, 0644);
  } catch (...) {
    ::unlink(pair.secret_file.c_str());  // ours, just made: no half pair is left
    throw;
  }
  return pair;
} catch (...) {
  support::rethrow_typed("generating the key pair " + path_prefix + ".key / .pub");
}

}  // namespace kiln
