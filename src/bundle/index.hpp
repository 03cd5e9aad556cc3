// A bundle's index (kiln-bundle.json, its first member) and signature (kiln-bundle.sig).
//
// The index is what the signature covers: every entry the bundle carries, the manifest records
// naming it, and for every file of it the size, mode and BLAKE2b-256 of its bytes. A reader
// accepts a member only when it is exactly one the index lists, with exactly that size and hash.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::bundle {

inline constexpr const char *kFormat = "kiln-bundle";
inline constexpr int kFormatVersion = 1;
inline constexpr const char *kIndexMember = "kiln-bundle.json";
inline constexpr const char *kSignatureMember = "kiln-bundle.sig";
// Optional, after the signature: a key list (key_list.hpp), signed by its root, not by the index's signer.
inline constexpr const char *kKeyListMember = "kiln-keys.json";
inline constexpr const char *kEntriesDir = "entries";

// What a reader accepts (far above any real bundle, far below what would exhaust a robot).
inline constexpr std::uint64_t kMaxIndexBytes = 16ull << 20;
inline constexpr std::uint64_t kMaxSignatureBytes = 4096;
inline constexpr std::size_t kMaxEntries = 10000;
inline constexpr std::size_t kMaxFilesPerEntry = 4096;
inline constexpr std::uint64_t kMaxMemberBytes = 4ull << 30;
inline constexpr std::uint64_t kMaxBundleBytes = 64ull << 30;  // every member together

struct IndexFile {
  std::string name;  // a plain name inside the entry directory
  std::uint64_t size = 0;
  unsigned mode = 0644;  // 0644 or 0755
  std::string blake2b;   // 64 lower-case hex digits
};

struct IndexRecord {  // a manifest record naming the entry
  std::string name;
  std::string input_key;  // empty for published artifacts
  // The release version of consumer/name this bundle carries (release_versions.hpp): a store
  // refuses a lower one from the same signer. 0: unversioned (a remote entry, an older kiln's bundle).
  std::uint64_t version = 0;
};

struct IndexEntry {
  std::string consumer;
  std::string content_key;
  std::string kind;  // kKindPlugin or kKindImages (kiln/module.hpp)
  std::vector<IndexRecord> records;
  std::vector<IndexFile> files;  // meta.json, identity.json and every file meta.json lists
};

struct Index {
  std::string created;  // UTC ISO-8601
  std::string expires;  // UTC ISO-8601, the same form; empty: none (a remote entry, an older kiln's bundle)
  std::string kiln_version;
  std::vector<IndexEntry> entries;
};

std::string serialize_index(const Index &index);
// IntegrityError naming `bundle` and the field for anything malformed, out of range, unsafe
// as a path (a name, consumer or key that is not a plain name or key) or listed twice.
Index parse_index(std::string_view text, const std::string &bundle);

// entries/<consumer>/<content_key>/<file>
std::string member_name(const IndexEntry &entry, const IndexFile &file);

struct Signature {
  std::string key_id;     // 16 hex digits
  std::string signature;  // 64 raw bytes: Ed25519 over the index's exact bytes
};
std::string serialize_signature(const Signature &signature);
Signature parse_signature(std::string_view text, const std::string &bundle);

}  // namespace kiln::bundle
