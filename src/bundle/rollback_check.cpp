// What an import would roll back, judged before anything is committed (read_bundle's step
// between verifying a bundle and committing it).
#include "bundle/rollback_check.hpp"

#include <kiln/errors.hpp>

#include "store/layout.hpp"
#include "store/manifest.hpp"

namespace kiln::bundle {
namespace {

[[noreturn]] void refuse_import(const std::string &bundle, const std::string &why, const std::string &fix) {
  throw IntegrityError("bundle " + bundle + ": " + why + "; nothing was imported (" + fix + ")");
}

}  // namespace

void RollbackCheck::save_versions() {
  for (auto &[consumer, state] : versions) state->save();
}

RollbackCheck check_rollbacks(const store::Storage &target, const Index &index, const std::string &signer,
                              bool allow_downgrade, const std::string &bundle) {
  const auto refuse = [&](const std::string &why, const std::string &fix) { refuse_import(bundle, why, fix); };
  RollbackCheck check;
  auto &before = check.before;
  auto &downgrades = check.downgrades;
  auto &rollbacks = check.rollbacks;
  auto &versions = check.versions;
  before.resize(index.entries.size());
  downgrades.resize(index.entries.size());
  rollbacks.resize(index.entries.size());
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    downgrades[e].resize(index.entries[e].records.size());
    rollbacks[e].resize(index.entries[e].records.size());
  }

  // Release versions: each signer's releases of a name only move forward (release_versions.hpp).
  // The locks are held through the commit, so two imports cannot interleave their checks and
  // their names; consumers in name order, so two imports never wait on each other in a circle.
  for (const auto &entry : index.entries) {
    bool versioned = false;
    for (const auto &record : entry.records) versioned = versioned || record.version != 0;
    if (versioned && !versions.count(entry.consumer)) versions[entry.consumer] = nullptr;
  }
  for (auto &[consumer, state] : versions) {
    state = std::make_unique<ReleaseVersions>(store::ConsumerLayout(target.writable().root(), consumer));
  }
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    const IndexEntry &entry = index.entries[e];
    for (std::size_t r = 0; r < entry.records.size(); ++r) {
      const IndexRecord &record = entry.records[r];
      if (record.version == 0) continue;
      ReleaseVersions &state = *versions.at(entry.consumer);
      if (const auto highest = state.highest(signer, record.name)) {
        // An older release of the same bytes changes nothing the robot runs: not a rollback.
        const bool older = record.version < highest->version && highest->content_key != entry.content_key;
        const bool reused = record.version == highest->version && highest->content_key != entry.content_key;
        if ((older || reused) && !allow_downgrade) {
          refuse(
              "carries release " + std::to_string(record.version) + " of " + entry.consumer + "/" + record.name +
                  " (entry " + entry.content_key + "), but this store accepted release " +
                  std::to_string(highest->version) + (reused ? " for entry " + highest->content_key : "") +
                  " from " + (signer == "unsigned" ? std::string("unsigned bundles") : "key " + signer) + " on " +
                  highest->accepted + (reused ? ": a release version reused for other bytes" : ": a replayed older release"),
              "import a newer release, or pass --allow-downgrade to roll the name back on purpose");
        }
        if (older || reused) {
          downgrades[e][r] = true;
          rollbacks[e][r] = "release " + std::to_string(record.version) + " over release " +
                            std::to_string(highest->version) + " (" + highest->content_key + ") of " +
                            (signer == "unsigned" ? std::string("unsigned bundles") : "key " + signer);
        }
      }
      state.accept(signer, record.name, {record.version, entry.content_key, store::utc_now_iso8601()});
    }
  }

  // What the target's manifests name now (read before anything commits: a damaged manifest is
  // refused while nothing has changed yet).
  // A name whose current record an import wrote from a bundle created later than this one is
  // rolled back by it: a replayed old bundle, refused unless asked for (nothing is written yet).
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    const IndexEntry &entry = index.entries[e];
    const auto manifest = target.writable().manifest(entry.consumer);
    for (std::size_t r = 0; r < entry.records.size(); ++r) {
      const IndexRecord &record = entry.records[r];
      std::string key;
      bool downgrade = false;
      if (manifest) {
        const auto it = manifest->artifacts.find(record.name);
        if (it != manifest->artifacts.end()) {
          const store::ManifestRecord &current = it->second;
          key = current.content_key + "/" + current.input_key + "/" + current.kind;
          downgrade = current.content_key != entry.content_key && !current.bundle_created.empty() &&
                      index.created < current.bundle_created;  // both UTC ISO-8601, same form: ordered as text
          if (downgrade && !allow_downgrade) {
            refuse(
                "created " + index.created + ", it would roll " + entry.consumer + "/" + record.name + " back from " +
                    current.content_key + " (imported from a bundle created " + current.bundle_created + ") to " +
                    entry.content_key,
                "import the newer bundle, or pass --allow-downgrade to roll the name back on purpose");
          }
        }
      }
      before[e].push_back(key);
      if (downgrade && rollbacks[e][r].empty()) {
        const auto &current = manifest->artifacts.at(record.name);
        rollbacks[e][r] = "a bundle created " + index.created + " over " + current.content_key + " from one created " +
                          current.bundle_created;
      }
      downgrades[e][r] = downgrades[e][r] || downgrade;
    }
  }
  return check;
}

}  // namespace kiln::bundle
