// Who may have signed a bundle (an import's, or a remote entry's): the keys a person passed
// (--trust, kiln.conf's trust =), or the key list the target store follows (trust_store.hpp),
// which also says for which role, which consumers and until when. Step 2 of an import, and the
// authority half of it once the index is parsed; nothing here writes until keep_offered_list.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/bundle.hpp>
#include <kiln/log.hpp>

#include "bundle/index.hpp"
#include "bundle/trust_store.hpp"
#include "store/storage.hpp"

namespace kiln::bundle {

class SignerCheck {
 public:
  // Reads the trusted key files and the target's trust state first: a bad --trust file or a
  // damaged key list is refused before any work. `role`: kRoleRelease or kRoleBuild.
  SignerCheck(const store::Storage &target, const std::vector<std::string> &trusted_files, std::string role,
              std::string bundle);

  bool store_follows_key_list() const { return trust_.active(); }
  // A key list the bundle carries: checked against the pinned root; a newer one than the store
  // holds judges this bundle and is kept by keep_offered_list, an older one is passed over (the
  // store's judges), one of the same generation must be the same bytes and one whose chain
  // leaves the store's root is refused. Without a pinned root it is ignored (a list cannot vouch
  // for itself), and said so.
  void offer_key_list(std::string_view text, const LogCallback &log);
  // The signature over the index's exact bytes, before anything else of the bundle is read.
  void check_signature(const std::string &index_text, const std::optional<Signature> &signature, bool allow_unsigned,
                       const LogCallback &log, ImportReport &report);
  // With a key list: the signer's role, consumers, revocation and expiry at the index's
  // creation time, and the list's own expiry (allow_expired as for the bundle).
  void check_authority(const Index &index, bool allow_expired, const LogCallback &log) const;
  // After every check passed, before anything is committed: a newer key list into `root`'s
  // trust/ (the store imported into). Returns its generation when written, else 0.
  std::uint64_t keep_offered_list(const boost::filesystem::path &root) const;

 private:
  [[noreturn]] void refuse(const std::string &why, const std::string &fix) const;
  const KeyList *list() const { return offered_ ? &*offered_ : trust_.list ? &*trust_.list : nullptr; }

  std::string bundle_;
  std::string role_;
  std::vector<PublicKey> trusted_;
  TrustState trust_;
  std::optional<KeyList> offered_;  // a carried list newer than the store's
  std::string signer_;              // key id whose signature verified
};

}  // namespace kiln::bundle
