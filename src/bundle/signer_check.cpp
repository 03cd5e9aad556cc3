#include "bundle/signer_check.hpp"

#include <ctime>
#include <set>

#include <kiln/errors.hpp>

#include "bundle/hash.hpp"
#include "bundle/release_versions.hpp"
#include "store/unwritable.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

std::string ids_of(const std::vector<PublicKey> &keys) {
  std::string ids;
  for (const auto &key : keys) ids += (ids.empty() ? "" : ", ") + key.key_id + " (" + key.file + ")";
  return ids;
}

}  // namespace

SignerCheck::SignerCheck(const store::Storage &target, const std::vector<std::string> &trusted_files, std::string role,
                         std::string bundle)
    : bundle_(std::move(bundle)), role_(std::move(role)) {
  init_sodium();
  for (const auto &file : trusted_files) trusted_.push_back(read_public_key(file));
  try {
    trust_ = read_trust(target);
  } catch (const IoError &) {
    store::throw_if_unwritable(target.writable().location());  // the usual cause, with its fix
    throw;
  }
}

void SignerCheck::refuse(const std::string &why, const std::string &fix) const {
  throw IntegrityError("bundle " + bundle_ + ": " + why + "; nothing was imported (" + fix + ")");
}

void SignerCheck::offer_key_list(std::string_view text, const LogCallback &log) {
  const std::string origin = kKeyListMember + std::string(" of bundle ") + bundle_;
  if (!trust_.active()) {
    if (log)
      log(LogLevel::warning,
          origin + " ignored: this store pins no root key to check it against (kiln key trust --root ROOT.pub)");
    return;
  }
  KeyList list = parse_key_list(text, origin);
  verify_key_list(list, *trust_.anchor, origin);
  if (trust_.list) {
    // An older list the root signed is no attack on a store that holds a newer one: the newer
    // judges (the bundle may simply be older than the latest rotation or revocation).
    if (list.generation < trust_.list->generation) {
      if (log) {
        log(LogLevel::info, origin + ": generation " + std::to_string(list.generation) + " is older than the store's " +
                                std::to_string(trust_.list->generation) + ", which judges the bundle");
      }
      return;
    }
    check_succession(*trust_.list, list, origin);
    if (list.generation == trust_.list->generation) return;
  }
  offered_ = std::move(list);
}

void SignerCheck::check_signature(const std::string &index_text, const std::optional<Signature> &signature,
                                  bool allow_unsigned, const LogCallback &log, ImportReport &report) {
  const KeyList *keys = list();
  if (trust_.active() && keys == nullptr) {
    refuse("this store pins root key " + trust_.anchor->key_id + " but holds no key list it signed",
           "import a bundle that carries one (kiln export --key-list), or install it: kiln key trust --key-list FILE");
  }
  if (signature && (keys != nullptr || !trusted_.empty())) {
    std::optional<PublicKey> signer;
    for (const auto &key : trusted_) {
      if (key.key_id == signature->key_id) signer = key;
    }
    if (!signer && keys != nullptr) {
      if (const ListedKey *listed = keys->find(signature->key_id)) {
        signer = public_key_of(listed->key_id, listed->public_hex,
                               "key list generation " + std::to_string(keys->generation));
      }
    }
    if (!signer) {
      refuse("is signed by key " + signature->key_id + ", which is none of the trusted keys" +
                 (trusted_.empty() ? "" : " " + ids_of(trusted_)) +
                 (keys ? (trusted_.empty() ? "" : " and") + std::string(" in key list generation ") +
                             std::to_string(keys->generation)
                       : ""),
             keys ? "ask the root key's keeper to add the signer (kiln key add), or pass --trust with its public key"
                  : "pass --trust with the signer's public key if you trust it");
    }
    if (!verify(*signer, index_text, signature->signature)) {
      refuse("its signature does not verify with key " + signer->key_id + " (" + signer->file +
                 "): the index was altered after signing, or the signature forged",
             "get the bundle again from its source");
    }
    signer_ = signer->key_id;
    report.signed_by = signer->key_id;
    report.signature_verified = true;
  } else if (signature) {
    if (!allow_unsigned) {
      if (role_ == kRoleBuild) {
        refuse("is signed by key " + signature->key_id + " but this machine trusts no key",
               "name the build machines' public key in kiln.conf (trust = PATH.pub), pin the fleet's root (kiln key "
               "trust), or set accept-unsigned = yes for a cache only you can write");
      }
      throw UsageError("bundle " + bundle_ + " is signed by key " + signature->key_id +
                       " but no --trust key was given; nothing was imported (pass --trust PUB with the signer's "
                       "public key, the PATH.pub of kiln keygen)");
    }
    if (log)
      log(LogLevel::warning, "bundle " + bundle_ + ": signature of key " + signature->key_id +
                                 " not checked (no --trust key; --allow-unsigned)");
  } else if (keys != nullptr || !trusted_.empty()) {
    // With a key trusted, a missing signature is a refusal like a wrong one: removing
    // kiln-bundle.sig must not get further than replacing it. --allow-unsigned means "no key is
    // configured, accept what comes", never "skip the keys that are".
    refuse("is not signed, and " +
               (keys ? "this store follows key list generation " + std::to_string(keys->generation)
                     : "trusted keys are given (" + ids_of(trusted_) + ")") +
               ": with a trusted key an unsigned bundle is refused, --allow-unsigned or not",
           "ask for a bundle signed by a trusted key, kiln export --sign KEY");
  } else if (!allow_unsigned) {
    if (role_ == kRoleBuild) {
      refuse("is not signed, and this machine accepts only entries a trusted key signed",
             "sign uploads (sign = PATH.key on the build machines) and trust that key here, or set "
             "accept-unsigned = yes for a cache only you can write");
    }
    throw UsageError("bundle " + bundle_ +
                     " is not signed; nothing was imported (ask for a signed bundle, "
                     "kiln export --sign KEY, or pass --allow-unsigned if you trust where it came from)");
  } else if (log) {
    log(LogLevel::warning,
        "bundle " + bundle_ + " is not signed: accepted without a signature check (--allow-unsigned, no --trust key)");
  }
}

void SignerCheck::check_authority(const Index &index, bool allow_expired, const LogCallback &log) const {
  const KeyList *keys = list();
  if (keys == nullptr || signer_.empty()) return;
  const std::string generation = "key list generation " + std::to_string(keys->generation);
  const std::int64_t now = std::time(nullptr);
  if (now > *support::parse_utc_time(keys->expires) + kClockSkewSeconds) {
    if (!allow_expired) {
      refuse(generation + " expired at " + keys->expires + " (this machine's clock says " +
                 support::format_utc_time(now) + ")",
             "ask the root key's keeper for a new list, or pass --allow-expired if this machine's clock is known to be "
             "wrong");
    }
    if (log) log(LogLevel::warning, generation + " expired at " + keys->expires + ": used anyway (--allow-expired)");
  }
  const ListedKey *listed = keys->find(signer_);
  if (listed == nullptr) {
    // A --trust key the list does not name: a person's own choice on this machine.
    return;
  }
  std::set<std::string> consumers;
  for (const auto &entry : index.entries) consumers.insert(entry.consumer);
  // An index from an older kiln has no creation time in the one form; judge it as signed now.
  const std::string signed_at = support::is_utc_time(index.created) ? index.created : support::format_utc_time(now);
  const SignerQuery query{signer_, role_, {consumers.begin(), consumers.end()}, signed_at};
  bool trusted_by_hand = false;
  for (const auto &key : trusted_) trusted_by_hand = trusted_by_hand || key.key_id == signer_;
  if (trusted_by_hand && !revoked_for(*listed, signed_at)) return;  // revocation outranks --trust; nothing else does
  if (const std::string why = signer_refusal(*keys, query); !why.empty()) {
    refuse("its signer is not allowed to sign it: " + why, "ask for a bundle signed by a key the list allows");
  }
}

std::uint64_t SignerCheck::keep_offered_list(const boost::filesystem::path &root) const {
  if (!offered_) return 0;
  return keep_key_list(root, trust_, *offered_) ? offered_->generation : 0;
}

}  // namespace kiln::bundle
