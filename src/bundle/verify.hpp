// A bundle read as a stream and verified, member by member, into staging directories: what an
// import (reader.hpp's read_bundle) and a remote fetch (read_entry_bundle) share before they
// commit anything.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <kiln/bundle.hpp>
#include <kiln/errors.hpp>
#include <kiln/log.hpp>

#include "bundle/index.hpp"
#include "bundle/signer_check.hpp"
#include "store/storage.hpp"

namespace kiln::bundle {

class Refusal {
 public:
  explicit Refusal(std::string bundle) : bundle_(std::move(bundle)) {}
  const std::string &bundle() const { return bundle_; }
  // IntegrityError: the bundle is not what its index (and signer) says.
  [[noreturn]] void operator()(const std::string &why, const std::string &fix = "get the bundle again from its source") const {
    throw IntegrityError("bundle " + bundle_ + ": " + why + "; nothing was imported (" + fix + ")");
  }

 private:
  std::string bundle_;
};

// A bundle read whole and checked: its index and one filled staging directory per entry,
// nothing committed yet (destroying it removes the stagings).
struct VerifiedBundle {
  Index index;
  std::vector<std::optional<store::Staging>> stagings;
  std::unique_ptr<SignerCheck> signers;  // keeps a key list the bundle brought, once all is checked
};

// Steps 1-4 of an import: the index, the signature, every member into staging, every entry's
// records. Fills report's signature fields and verified_bytes. `role` is what the signer must
// be allowed to sign for where the store follows a key list (key_list.hpp).
VerifiedBundle verify_bundle(const store::Storage &target, const ImportRequest &request, const std::string &role,
                             const LogCallback &log, ImportReport &report);

}  // namespace kiln::bundle
