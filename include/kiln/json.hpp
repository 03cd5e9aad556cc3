// kiln: the one JSON form of each public report type -- identities (as identity.json records
// them), resolutions, loads, builds, listings, the toolchain, the remote-cache, store-maintenance
// and bundle reports. kiln's --json output prints these and Python's dicts are these, so a script
// can move between the two. Keys are snake_case; archs are written as their names ("sm_90"), a
// list of them as a JSON array.
#pragma once

#include <nlohmann/json.hpp>

#include <kiln/bundle.hpp>
#include <kiln/errors.hpp>
#include <kiln/gc.hpp>
#include <kiln/identity.hpp>
#include <kiln/keys.hpp>
#include <kiln/remote.hpp>
#include <kiln/verify.hpp>

namespace kiln {

// Declared in kiln/module.hpp, kiln/kernels.hpp, kiln/store.hpp, kiln/recipe.hpp,
// kiln/toolchain.hpp and kiln/runtime.hpp.
struct ArtifactImage;
struct Resolution;
struct LoadTimings;
struct LoadReport;
struct ImageChoice;
struct KernelLoadTimings;
struct KernelLoadReport;
struct ArtifactSummary;
struct StoreInfo;
struct BuildPlan;
struct BuildResult;
struct PublishResult;
struct ToolStatus;
struct ToolchainReport;

nlohmann::json to_json(const DeviceIdentity &device);
nlohmann::json to_json(const DeviceReport &report);
nlohmann::json to_json(const ArtifactIdentity &artifact);
nlohmann::json to_json(const Compatibility &compatibility);
nlohmann::json to_json(const Reason &reason);
nlohmann::json to_json(const RemoteStatus &status);
nlohmann::json to_json(const RemoteTransfer &transfer);
nlohmann::json to_json(const VerifyReport &report);  // with damage_left, repaired and clean counted
nlohmann::json to_json(const StoreFinding &finding);
nlohmann::json to_json(const GcReport &report);
nlohmann::json to_json(const GcItem &item);
nlohmann::json to_json(const ExportReport &report);
nlohmann::json to_json(const ImportReport &report);
nlohmann::json to_json(const KeyListInfo &info);
nlohmann::json to_json(const TrustStatus &status);
nlohmann::json to_json(const ArtifactImage &image);
nlohmann::json to_json(const Resolution &resolution);
nlohmann::json to_json(const LoadTimings &timings);
nlohmann::json to_json(const LoadReport &report);
nlohmann::json to_json(const ImageChoice &choice);
nlohmann::json to_json(const KernelLoadTimings &timings);
nlohmann::json to_json(const KernelLoadReport &report);
nlohmann::json to_json(const ArtifactSummary &summary);
nlohmann::json to_json(const StoreInfo &store);
nlohmann::json to_json(const BuildPlan &plan);
nlohmann::json to_json(const BuildResult &result);
nlohmann::json to_json(const PublishResult &result);
nlohmann::json to_json(const ToolStatus &tool);
nlohmann::json to_json(const ToolchainReport &toolchain);

}  // namespace kiln
