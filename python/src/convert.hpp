// Conversions between kiln's public C++ types and Python values (dicts, lists, str, paths).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <pybind11/pybind11.h>

#include <kiln/placement.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>
#include <kiln/store.hpp>
#include <kiln/toolchain.hpp>

namespace kiln::python {

namespace py = pybind11;

// Text kiln hands back. Paths and compiler output may hold bytes that are not UTF-8 (a Latin-1
// store directory): surrogateescape keeps them, so os.fsencode(value) gives the bytes back.
py::str text(const std::string &value);

// A path argument: str, bytes or os.PathLike, as the file system bytes (os.fsencode(os.fspath(x)));
// anything else is an ArgumentTypeError naming the parameter `what`.
std::string fs_path(const py::handle &path, const char *what);
bool is_path_like(const py::handle &value);

// Archs: None, "sm_90,sm_87" or ["sm_90", "sm_87"] (UsageError for a bad name, as the CLI).
std::vector<Arch> archs_argument(const py::handle &archs);
// A publish's archs: the same forms, and "none" (host-only), as `kiln publish --arch`.
void publish_archs(PublishRequest &request, const py::handle &archs);

// JSON (kiln/json.hpp's forms and what nlohmann holds) as plain Python values.
py::object from_json(const nlohmann::json &value);

py::dict to_dict(const StoreInfo &store);
py::dict to_dict(const DeviceIdentity &device);
py::dict to_dict(const DeviceReport &report);
py::dict to_dict(const ArtifactIdentity &identity);
py::dict to_dict(const Compatibility &compatibility);
py::dict to_dict(const Resolution &resolution);
py::dict to_dict(const LoadReport &report);
py::dict to_dict(const ArtifactSummary &summary);
py::dict to_dict(const PublishResult &result);
py::dict to_dict(const BuildPlan &plan);
py::dict to_dict(const BuildResult &result);
py::dict to_dict(const BuildEvent &event);
py::dict to_dict(const ToolStatus &tool);
py::dict to_dict(const ToolchainReport &toolchain);
py::list reasons_list(const std::vector<Reason> &reasons);

// The activate arguments of kiln.Instance and the solver classes as kiln::ActivateOptions.
inline ActivateOptions activate_options(int device, std::uint32_t max_batch, std::shared_ptr<GpuPartition> partition,
                                        int stream_priority) {
  ActivateOptions options;
  options.device = device;
  options.max_batch = max_batch;
  options.partition = std::move(partition);
  options.stream_priority = stream_priority;
  return options;
}

}  // namespace kiln::python
