#include "bundle/key_list.hpp"

#include <algorithm>
#include <ctime>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "bundle/hash.hpp"
#include "store/names.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxKeys = 1000;
constexpr std::size_t kMaxRoots = 100;
constexpr std::size_t kMaxNameBytes = 200;

bool is_key_id(const std::string &text) {
  return text.size() == 16 && text.find_first_not_of("0123456789abcdef") == std::string::npos;
}

json root_json(const RootKey &root) {
  json value = {{"key_id", root.key_id}, {"public", root.public_hex}, {"since_generation", root.since_generation}};
  if (!root.endorsement.empty()) value["endorsement"] = root.endorsement;
  return value;
}

json key_json(const ListedKey &key) {
  json value = {{"key_id", key.key_id}, {"public", key.public_hex},   {"name", key.name},
                {"roles", key.roles},   {"consumers", key.consumers}, {"expires", key.expires}};
  if (key.revoked) {
    value["revoked"] = {{"all", key.revoked_all}, {"reason", key.revoke_reason}};
    if (!key.revoked_all) value["revoked"]["at"] = key.revoked_at;
  }
  return value;
}

// nlohmann's compact dump with its sorted keys: one text for one value, so what a root signed
// is what any reader recomputes from the parsed value.
std::string signed_text_of(const KeyList &list) {
  json roots = json::array(), keys = json::array();
  for (const auto &root : list.roots) roots.push_back(root_json(root));
  for (const auto &key : list.keys) keys.push_back(key_json(key));
  return support::dump_json({{"format", kKeyListFormat},
                             {"version", kKeyListVersion},
                             {"generation", list.generation},
                             {"created", list.created},
                             {"expires", list.expires},
                             {"roots", roots},
                             {"keys", keys}});
}

class KeyListReader {
 public:
  explicit KeyListReader(std::string origin) : origin_(std::move(origin)) {}
  [[noreturn]] void fail(const std::string &why) const {
    throw IntegrityError("key list " + origin_ + " is not a valid kiln key list (" + why +
                         "): use the file kiln key wrote, or ask its root key's keeper for it again");
  }
  std::string text(const json &object, const char *field, bool required = true) const {
    if (!object.contains(field)) {
      if (required) fail("no \"" + std::string(field) + "\"");
      return "";
    }
    const json &value = object[field];
    if (!value.is_string() || value.get_ref<const std::string &>().size() > kMaxNameBytes) {
      fail("\"" + std::string(field) + "\" is " + support::describe_json(value) + ", not a short string");
    }
    return value.get<std::string>();
  }
  std::string time(const json &object, const char *field) const {
    std::string value = text(object, field);
    if (!support::parse_utc_time(value)) fail("\"" + std::string(field) + "\" is not a UTC time 2026-01-31T23:59:59Z");
    return value;
  }
  std::string key_id(const json &object) const {
    std::string value = text(object, "key_id");
    if (!is_key_id(value)) fail("key id \"" + value.substr(0, 40) + "\" is not 16 hex digits");
    return value;
  }
  std::string public_hex(const json &object, const std::string &key_id) const {
    std::string value = text(object, "public");
    unsigned char key[crypto_sign_PUBLICKEYBYTES];
    if (!from_hex(value, key, sizeof key)) fail("key " + key_id + ": \"public\" is not 64 hex digits");
    if (key_id_of(key) != key_id) fail("key " + key_id + ": the key id does not match its public key");
    return value;
  }
  std::uint64_t generation(const json &object, const char *field) const {
    if (!object.contains(field)) fail("no \"" + std::string(field) + "\"");
    const auto value = support::checked_integer<std::uint64_t>(object[field], 1);
    if (!value)
      fail("\"" + std::string(field) + "\" is " + support::describe_json(object[field]) + ", not a positive integer");
    return *value;
  }
  // A list of min..max objects.
  const json &objects(const json &object, const char *field, std::size_t min, std::size_t max) const {
    if (!object.contains(field) || !object[field].is_array() || object[field].size() < min ||
        object[field].size() > max) {
      fail("\"" + std::string(field) + "\" is not a list of " + std::to_string(min) + " to " + std::to_string(max) +
           " keys");
    }
    for (const auto &item : object[field]) {
      if (!item.is_object()) fail("\"" + std::string(field) + "\" holds " + support::describe_json(item));
    }
    return object[field];
  }
  std::vector<std::string> names(const json &object, const char *field, bool consumers) const {
    if (!object.contains(field) || !object[field].is_array() || object[field].empty() ||
        object[field].size() > kMaxKeys) {
      fail("\"" + std::string(field) + "\" is not a list of 1 to " + std::to_string(kMaxKeys) + " names");
    }
    std::vector<std::string> out;
    for (const auto &item : object[field]) {
      if (!item.is_string()) fail("\"" + std::string(field) + "\" holds " + support::describe_json(item));
      const std::string name = item.get<std::string>();
      const bool valid =
          consumers ? name == "*" || store::is_valid_name(name) : name == kRoleBuild || name == kRoleRelease;
      if (!valid)
        fail("\"" + std::string(field) + "\" holds \"" + name.substr(0, 40) + "\"" +
             (consumers ? "" : " (roles: build, release)"));
      out.push_back(name);
    }
    return out;
  }

 private:
  std::string origin_;
};

}  // namespace

const ListedKey *KeyList::find(const std::string &key_id) const {
  for (const auto &key : keys) {
    if (key.key_id == key_id) return &key;
  }
  return nullptr;
}

std::string endorsement_text(const RootKey &next) {
  return "kiln-root-rotation v1\nkey-id " + next.key_id + "\npublic " + next.public_hex + "\nsince-generation " +
         std::to_string(next.since_generation) + "\n";
}

std::string serialize_key_list(const KeyList &list) {
  json document = json::parse(list.signed_text);
  return support::dump_json(
             {{"signed", document}, {"signature", {{"key_id", list.root().key_id}, {"signature", list.signature}}}},
             2) +
         "\n";
}

KeyList parse_key_list(std::string_view text, const std::string &origin) {
  const KeyListReader read(origin);
  if (text.size() > kMaxKeyListBytes) read.fail("larger than " + std::to_string(kMaxKeyListBytes) + " bytes");
  const json document = support::parse_json(text, [&](const std::string &why) { read.fail(why); });
  if (!document.is_object() || !document.contains("signed") || !document["signed"].is_object() ||
      !document.contains("signature") || !document["signature"].is_object()) {
    read.fail("not an object of \"signed\" and \"signature\"");
  }
  const json &body = document["signed"];
  if (read.text(body, "format") != kKeyListFormat) read.fail("\"format\" is not \"kiln-key-list\"");
  if (!body.contains("version") || support::checked_integer<int>(body["version"]) != kKeyListVersion) {
    read.fail("\"version\" is not 1: written by a newer kiln? update kiln");
  }
  KeyList list;
  list.generation = read.generation(body, "generation");
  list.created = read.time(body, "created");
  list.expires = read.time(body, "expires");
  for (const auto &item : read.objects(body, "roots", 1, kMaxRoots)) {
    RootKey root;
    root.key_id = read.key_id(item);
    root.public_hex = read.public_hex(item, root.key_id);
    root.since_generation = read.generation(item, "since_generation");
    root.endorsement = read.text(item, "endorsement", false);
    const bool first = list.roots.empty();
    if (first != root.endorsement.empty())
      read.fail("root " + root.key_id +
                (first ? ": the first root carries an endorsement" : ": no endorsement by the root before it"));
    if (!first && root.since_generation <= list.roots.back().since_generation)
      read.fail("root " + root.key_id + ": generations do not increase along the roots");
    if (root.since_generation > list.generation)
      read.fail("root " + root.key_id + " starts after the list's generation");
    list.roots.push_back(root);
  }
  for (const auto &item : read.objects(body, "keys", 0, kMaxKeys)) {
    ListedKey key;
    key.key_id = read.key_id(item);
    key.public_hex = read.public_hex(item, key.key_id);
    key.name = read.text(item, "name");
    key.roles = read.names(item, "roles", false);
    key.consumers = read.names(item, "consumers", true);
    key.expires = read.time(item, "expires");
    if (item.contains("revoked")) {
      const json &revoked = item["revoked"];
      if (!revoked.is_object() || !revoked.contains("all") || !revoked["all"].is_boolean())
        read.fail("key " + key.key_id + ": \"revoked\" has no \"all\": true or false");
      key.revoked = true;
      key.revoked_all = revoked["all"].get<bool>();
      key.revoke_reason = read.text(revoked, "reason");
      if (!key.revoked_all) key.revoked_at = read.time(revoked, "at");
    }
    if (list.find(key.key_id) != nullptr) read.fail("key " + key.key_id + " is listed twice");
    list.keys.push_back(key);
  }
  const json &signature = document["signature"];
  if (read.text(signature, "key_id") != list.root().key_id)
    read.fail("its signature does not name its last root " + list.root().key_id);
  list.signature = read.text(signature, "signature");
  list.signed_text = support::dump_json(body);
  return list;
}

void sign_key_list(KeyList &list, const SecretKey &root) {
  if (list.roots.empty() || root.key_id != list.root().key_id) {
    throw UsageError("key " + root.key_id + " (" + root.file + ") is not the key list's root" +
                     (list.roots.empty() ? std::string() : " " + list.root().key_id) +
                     ": pass the root's PATH.key with --root");
  }
  list.created = support::format_utc_time(std::time(nullptr));
  list.signed_text = signed_text_of(list);
  const std::string signature = root.sign(list.signed_text);
  list.signature = to_hex(reinterpret_cast<const unsigned char *>(signature.data()), signature.size());
}

PublicKey public_key_of(const std::string &key_id, const std::string &public_hex, const std::string &what) {
  PublicKey key;
  key.file = what;
  if (!from_hex(public_hex, key.key, sizeof key.key) || key_id_of(key.key) != key_id) {
    throw IntegrityError(what + ": key " + key_id + " does not match its public key");
  }
  key.key_id = key_id;
  return key;
}

static bool verifies(const std::string &key_id, const std::string &public_hex, const std::string &message,
                     const std::string &signature_hex) {
  unsigned char signature[crypto_sign_BYTES];
  if (!from_hex(signature_hex, signature, sizeof signature)) return false;
  return verify(public_key_of(key_id, public_hex, "key list"), message,
                std::string_view(reinterpret_cast<const char *>(signature), sizeof signature));
}

static void verify_from(const KeyList &list, std::size_t first, const std::string &origin) {
  const auto refuse = [&](const std::string &why) {
    throw IntegrityError("key list " + origin + " (generation " + std::to_string(list.generation) + "): " + why +
                         "; nothing was trusted (use the list the root key's keeper signed)");
  };
  for (std::size_t i = first + 1; i < list.roots.size(); ++i) {
    const RootKey &from = list.roots[i - 1], &to = list.roots[i];
    if (!verifies(from.key_id, from.public_hex, endorsement_text(to), to.endorsement)) {
      refuse("root " + to.key_id + " is not endorsed by root " + from.key_id + " before it");
    }
  }
  init_sodium();
  if (!verifies(list.root().key_id, list.root().public_hex, list.signed_text, list.signature)) {
    refuse("its signature does not verify with its root " + list.root().key_id +
           ": it was altered after signing, or forged");
  }
}

void verify_key_list(const KeyList &list, const PublicKey &anchor, const std::string &origin) {
  init_sodium();
  const std::string anchor_hex = to_hex(anchor.key, sizeof anchor.key);
  for (std::size_t i = 0; i < list.roots.size(); ++i) {
    if (list.roots[i].key_id == anchor.key_id && list.roots[i].public_hex == anchor_hex)
      return verify_from(list, i, origin);
  }
  std::string roots;
  for (const auto &root : list.roots) roots += (roots.empty() ? "" : ", ") + root.key_id;
  throw IntegrityError(
      "key list " + origin + " is signed by the wrong root: this store trusts root " + anchor.key_id + " (" +
      anchor.file + "), and the list's roots are " + roots +
      "; nothing was trusted (a new root is trusted through a rotation the old root endorsed: kiln key rotate-root)");
}

void verify_key_list_self(const KeyList &list, const std::string &origin) {
  init_sodium();
  verify_from(list, 0, origin);
}

void check_succession(const KeyList &accepted, const KeyList &candidate, const std::string &origin) {
  const std::string both = "generation " + std::to_string(candidate.generation) + " offered, " +
                           std::to_string(accepted.generation) + " accepted";
  if (candidate.generation < accepted.generation) {
    throw IntegrityError("key list " + origin + " is older than the one this store accepted (" + both +
                         "): a replayed old list could undo a revocation; nothing was trusted (use the newest list)");
  }
  if (candidate.generation == accepted.generation && candidate.signed_text != accepted.signed_text) {
    throw IntegrityError("key list " + origin + " differs from the one this store accepted at the same generation (" +
                         both +
                         "): two lists were signed as one generation; nothing was trusted (ask the root key's "
                         "keeper for a new generation)");
  }
  const RootKey &held = accepted.root();
  const bool follows = std::any_of(candidate.roots.begin(), candidate.roots.end(), [&](const RootKey &root) {
    return root.key_id == held.key_id && root.public_hex == held.public_hex;
  });
  if (!follows) {
    throw IntegrityError("key list " + origin + " is signed by root " + candidate.root().key_id +
                         ", whose chain does not pass through root " + held.key_id + ", which this store accepted (" +
                         both + "): a root that was rotated away cannot sign for it again; nothing was trusted");
  }
}

bool revoked_for(const ListedKey &key, const std::string &signed_at) {
  return key.revoked && (key.revoked_all || signed_at >= key.revoked_at);
}

std::string signer_refusal(const KeyList &list, const SignerQuery &query) {
  const ListedKey *key = list.find(query.key_id);
  const std::string which = "key list generation " + std::to_string(list.generation);
  if (key == nullptr) return "key " + query.key_id + " is not in the " + which;
  const std::string named = "key " + key->key_id + (key->name.empty() ? "" : " (" + key->name + ")");
  if (revoked_for(*key, query.signed_at)) {
    return named + " is revoked" +
           (key->revoked_all ? " for everything it signed"
                             : " since " + key->revoked_at + " (signed " + query.signed_at + ")") +
           (key->revoke_reason.empty() ? "" : ": " + key->revoke_reason);
  }
  if (query.signed_at > key->expires) return named + " expired " + key->expires + " (signed " + query.signed_at + ")";
  if (std::find(key->roles.begin(), key->roles.end(), query.role) == key->roles.end()) {
    std::string roles;
    for (const auto &role : key->roles) roles += (roles.empty() ? "" : ", ") + role;
    return named + " may sign for " + roles + ", not " + query.role + " (" + which + ")";
  }
  const bool any = std::find(key->consumers.begin(), key->consumers.end(), "*") != key->consumers.end();
  for (const auto &consumer : query.consumers) {
    if (!any && std::find(key->consumers.begin(), key->consumers.end(), consumer) == key->consumers.end()) {
      return named + " may not sign for consumer " + consumer + " (" + which + ")";
    }
  }
  return "";
}

}  // namespace kiln::bundle
