// include/kiln/json.hpp: the JSON forms of the remote caches' public types (kiln/remote.hpp), as
// `kiln remote status --json`, `kiln remote push --json` and the Python binding give them.
#include <kiln/json.hpp>

namespace kiln {

using nlohmann::json;

json to_json(const RemoteStatus &status) {
  json remotes = json::array();
  for (const auto &remote : status.remotes) {
    remotes.push_back({{"url", remote.url}, {"read_only", remote.read_only}, {"connect_timeout_s", remote.connect_timeout_s},
                       {"timeout_s", remote.timeout_s}, {"state", remote.state}, {"detail", remote.detail},
                       {"round_trip_ms", remote.round_trip_ms}});
  }
  return {{"config_file", status.config_file.empty() ? json(nullptr) : json(status.config_file)},
          {"remotes", remotes},
          {"trusted_keys", status.trusted_keys},
          {"signing_key", status.signing_key.empty() ? json(nullptr) : json(status.signing_key)},
          {"accept_unsigned", status.accept_unsigned},
          {"entry_lifetime_s", status.entry_lifetime_s}};
}

json to_json(const RemoteTransfer &transfer) {
  return {{"consumer", transfer.consumer}, {"name", transfer.name},     {"content_key", transfer.content_key},
          {"input_key", transfer.input_key}, {"remote", transfer.remote}, {"status", transfer.status},
          {"bytes", transfer.bytes}, {"replaced", transfer.replaced.empty() ? json(nullptr) : json(transfer.replaced)}};
}

}  // namespace kiln
