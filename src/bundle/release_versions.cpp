#include "bundle/release_versions.hpp"

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

#include "files/files.hpp"
#include "store/names.hpp"
#include "support/fault_point.hpp"
#include "support/json_read.hpp"
#include "support/json_write.hpp"
#include "support/utc_time.hpp"

namespace kiln::bundle {
namespace {

using nlohmann::json;

constexpr const char *kVersionsFormat = "kiln-versions";

[[noreturn]] void damaged(const boost::filesystem::path &file, const std::string &why) {
  throw IntegrityError("release versions " + file.string() + " are damaged (" + why +
                       "): they say which bundle releases this store accepted; restore the file from a backup, or "
                       "remove it to accept any release again (then re-import the current bundles)");
}

}  // namespace

std::optional<std::int64_t> duration_seconds(const std::string &text) {
  if (text.size() < 2) return std::nullopt;
  const char unit = text.back();
  const std::string digits = text.substr(0, text.size() - 1);
  if (digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const std::int64_t count = std::stoll(digits);
  const std::int64_t scale = unit == 'd' ? 86400 : unit == 'h' ? 3600 : unit == 'm' ? 60 : unit == 's' ? 1 : 0;
  if (scale == 0 || count == 0) return std::nullopt;
  return count * scale;
}

std::string expiry_of(const std::string &text, std::int64_t created) {
  if (text.empty()) return support::format_utc_time(created + kDefaultValiditySeconds);
  if (const auto at = support::parse_utc_time(text)) return support::format_utc_time(*at);
  const auto duration = duration_seconds(text);
  if (!duration) {
    throw UsageError("--expires '" + text +
                     "' is neither a duration (90d, 12h, 30m, 3600s) nor a UTC time of the form "
                     "2027-01-31T23:59:59Z");
  }
  return support::format_utc_time(created + *duration);
}

ReleaseVersions::ReleaseVersions(const store::ConsumerLayout &layout)
    : layout_(layout), lock_((files::create_directories(layout.dir()), layout.versions_lock())) {
  std::string text;
  try {
    text = files::read_file(layout_.versions(), files::FileOrigin::store, files::kMaxJsonFileBytes);
  } catch (const NotFoundError &) {
    return;  // nothing accepted yet
  }
  const json root = support::parse_json(text, [&](const std::string &why) { damaged(layout_.versions(), why); });
  if (!root.is_object() || root.value("format", "") != kVersionsFormat || root.value("version", 0) != 1 ||
      !root.contains("signers") || !root["signers"].is_object()) {
    damaged(layout_.versions(), "not a kiln-versions 1 file");
  }
  for (const auto &[signer, names] : root["signers"].items()) {
    if (!names.is_object()) damaged(layout_.versions(), "signer " + signer + " is not an object");
    for (const auto &[name, item] : names.items()) {
      const auto version = item.is_object() && item.contains("version")
                               ? support::checked_integer<std::uint64_t>(item["version"], 1)
                               : std::nullopt;
      if (!version || !item.contains("content_key") || !item["content_key"].is_string() ||
          !store::is_valid_key(item["content_key"].get<std::string>())) {
        damaged(layout_.versions(), "the record of " + signer + " for " + name + " is malformed");
      }
      signers_[signer][name] = {*version, item["content_key"].get<std::string>(), item.value("accepted", "")};
    }
  }
}

std::optional<AcceptedVersion> ReleaseVersions::highest(const std::string &signer, const std::string &name) const {
  const auto by_signer = signers_.find(signer);
  if (by_signer == signers_.end()) return std::nullopt;
  const auto found = by_signer->second.find(name);
  if (found == by_signer->second.end()) return std::nullopt;
  return found->second;
}

void ReleaseVersions::accept(const std::string &signer, const std::string &name, const AcceptedVersion &version) {
  const auto current = highest(signer, name);
  if (current && current->version > version.version) return;  // a person's downgrade leaves the high mark
  if (current && current->version == version.version && current->content_key == version.content_key) return;
  signers_[signer][name] = version;
  changed_ = true;
}

void ReleaseVersions::save() {
  if (!changed_) return;
  json signers = json::object();
  for (const auto &[signer, names] : signers_) {
    for (const auto &[name, accepted] : names) {
      signers[signer][name] = {
          {"version", accepted.version}, {"content_key", accepted.content_key}, {"accepted", accepted.accepted}};
    }
  }
  const json root = {{"format", kVersionsFormat}, {"version", 1}, {"signers", signers}};
  files::write_file_atomic(layout_.versions(), support::dump_json(root, 1) + "\n");
  changed_ = false;
  KILN_FAULT_POINT("import.after_versions");
}

}  // namespace kiln::bundle
