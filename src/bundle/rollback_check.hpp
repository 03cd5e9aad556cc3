// An import's rollback checks: each signer's releases of a name only move forward
// (release_versions.hpp), and a bundle created before the one that set a name's record does not
// roll it back -- unless a person allows a downgrade, which the name's record then says.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bundle/index.hpp"
#include "bundle/release_versions.hpp"
#include "store/storage.hpp"

namespace kiln::bundle {

struct RollbackCheck {
  // Per index entry, per record: what the target's manifest names now ("key/input/kind", empty
  // when nothing), whether importing it is a downgrade, and what such a downgrade rolls back.
  std::vector<std::vector<std::string>> before;
  std::vector<std::vector<bool>> downgrades;
  std::vector<std::vector<std::string>> rollbacks;
  // Each versioned consumer's release state, its lock held until this is destroyed (through
  // the commit: two imports cannot interleave their checks and their names).
  std::map<std::string, std::unique_ptr<ReleaseVersions>> versions;

  // Writes the accepted releases (after every check passed, before anything is committed).
  void save_versions();
};

// IntegrityError naming `bundle` for a rollback not allowed; nothing is written.
RollbackCheck check_rollbacks(const store::Storage &target, const Index &index, const std::string &signer,
                              bool allow_downgrade, const std::string &bundle);

}  // namespace kiln::bundle
