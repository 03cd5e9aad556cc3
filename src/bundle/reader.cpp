#include "bundle/reader.hpp"

#include <ctime>
#include <string>
#include <vector>

#include "bundle/release_versions.hpp"
#include "bundle/rollback_check.hpp"
#include "bundle/verify.hpp"
#include "support/fault_point.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {

ImportReport read_bundle(const store::Storage &target, const ImportRequest &request, const LogCallback &log,
                         const std::function<void(const std::string &consumer, const std::string &name)> &changed) {
  ImportReport report;
  report.bundle = request.bundle;
  report.store_root = target.writable().root().string();
  VerifiedBundle verified = verify_bundle(target, request, kRoleRelease, log, report);
  const Index &index = verified.index;
  auto &stagings = verified.stagings;
  const std::string signer = report.signature_verified ? report.signed_by : "unsigned";
  RollbackCheck checked = check_rollbacks(target, index, signer, request.allow_downgrade, request.bundle);
  const auto &before = checked.before;
  const auto &downgrades = checked.downgrades;
  const auto &rollbacks = checked.rollbacks;
  // Every check passed: the versions are recorded before anything is committed, so a crash from
  // here on leaves a store that knows this release (importing it again completes the job).
  checked.save_versions();
  // A newer key list the bundle brought, likewise: the store follows it from here on.
  report.key_list_generation = verified.signers->keep_offered_list(target.writable().root());

  // 5. The whole bundle verified: commit every entry in one batch (one flush for all staged
  // files, one for all renames; an intact one already there is kept), then the bykey pointers
  // and one manifest update per consumer, with the store's own protocol. A crash between two
  // entry commits leaves only entries no manifest names yet -- invisible to every reader -- and
  // importing the bundle again completes the job.
  std::vector<store::Staging> batch;
  batch.reserve(stagings.size());
  for (auto &staging : stagings) batch.push_back(std::move(*staging));
  const std::vector<bool> fresh =
      target.writable().commit_entries(std::move(batch), log, [](std::size_t) { KILN_FAULT_POINT("import.after_entry"); });
  std::vector<store::Publication> publications;
  const std::string now = store::utc_now_iso8601();
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    const IndexEntry &entry = index.entries[e];
    for (std::size_t r = 0; r < entry.records.size(); ++r) {
      const IndexRecord &record = entry.records[r];
      const std::string rollback =
          downgrades[e][r] ? "rolled back with --allow-downgrade on " + now + ": " + rollbacks[e][r] : "";
      publications.push_back(
          {entry.consumer, record.name, entry.content_key, record.input_key, entry.kind, index.created, rollback});
    }
  }
  target.point_all(publications);
  for (std::size_t e = 0; e < index.entries.size(); ++e) {
    const IndexEntry &entry = index.entries[e];
    std::uint64_t bytes = 0;
    for (const auto &file : entry.files) bytes += file.size;
    for (std::size_t r = 0; r < entry.records.size(); ++r) {
      const IndexRecord &record = entry.records[r];
      const bool record_changed = before[e][r] != entry.content_key + "/" + record.input_key + "/" + entry.kind;
      if (record_changed && changed) changed(entry.consumer, record.name);
      const char *status = downgrades[e][r] ? "downgraded" : fresh[e] || record_changed ? "added" : "already present";
      report.entries.push_back(
          {entry.consumer, record.name, entry.content_key, entry.kind, record.input_key, bytes, status, record.version});
      if (downgrades[e][r] && log) {
        log(LogLevel::warning, entry.consumer + "/" + record.name + " rolled back to " + entry.content_key +
                                   " from a bundle created " + index.created + " (--allow-downgrade)");
      }
    }
  }
  if (log) {
    log(LogLevel::info, "imported " + std::to_string(report.entries.size()) + " artifact(s) from " + request.bundle +
                            " into " + report.store_root +
                            (report.signature_verified ? ", signed by " + report.signed_by : ", signature not checked"));
  }
  return report;
}

FetchedEntry read_entry_bundle(const store::Storage &target, const EntryBundleRequest &request, const LogCallback &log) {
  ImportRequest import;
  import.bundle = request.bundle;
  import.trusted_keys = request.trusted_keys;
  import.allow_unsigned = request.accept_unsigned;  // only where the fleet said so: no key, damage is all that is checked
  ImportReport report;
  VerifiedBundle verified = verify_bundle(target, import, kRoleBuild, LogCallback(), report);
  const Refusal refuse(request.bundle);
  if (verified.index.entries.size() != 1) {
    refuse("holds " + std::to_string(verified.index.entries.size()) + " entries where one was asked for");
  }
  // An entry is valid for the fleet's entry lifetime from its signed creation (its expiry was
  // checked above): one claiming longer, or no expiry at all, could outlive its signer's
  // revocation; it is a miss here until an upload replaces it.
  const std::string replaced = "a miss: a build machine's upload replaces it on the remote";
  const auto created = support::parse_utc_time(verified.index.created);
  const auto expires = support::parse_utc_time(verified.index.expires);
  if (!created || !expires) refuse("carries no expiry (an older kiln's upload)", replaced);
  if (*expires - *created > request.max_lifetime_s + kClockSkewSeconds) {
    refuse("claims to be valid for " + std::to_string((*expires - *created) / 86400) + " days (created " +
               verified.index.created + ", expires " + verified.index.expires + "), longer than this machine's " +
               "entry-lifetime of " + std::to_string(request.max_lifetime_s / 86400) + " days",
           replaced + ", or raise entry-lifetime in kiln.conf to the fleet's");
  }
  const IndexEntry &entry = verified.index.entries.front();
  if (entry.consumer != request.consumer) refuse("holds an entry of consumer " + entry.consumer + ", not " + request.consumer);
  if (!request.content_key.empty() && entry.content_key != request.content_key) {
    refuse("holds entry " + entry.content_key + ", not the " + request.content_key + " asked for");
  }
  if (!request.input_key.empty()) {
    bool recorded = false;
    for (const auto &record : entry.records) recorded = recorded || record.input_key == request.input_key;
    if (!recorded) refuse("holds entry " + entry.content_key + ", which its signed index does not record for input key " + request.input_key);
  }
  // An intact one there is kept; an entry only judged goes with its staging.
  if (request.commit) target.writable().commit_entry(std::move(*verified.stagings.front()), log);
  return {entry.content_key, report.signed_by, verified.index.expires};
}

}  // namespace kiln::bundle
