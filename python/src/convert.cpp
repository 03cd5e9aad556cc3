// Conversions between kiln's public types and Python values. A report's dict is its one JSON
// form (kiln/json.hpp), the CLI's --json output, so a script can move between the two.
#include "convert.hpp"

#include <kiln/json.hpp>
#include <kiln/recipe.hpp>
#include <kiln/store.hpp>
#include <kiln/toolchain.hpp>
#include <kiln/version.h>

#include "errors.hpp"

namespace kiln::python {

py::str text(const std::string &value) {
  PyObject *object = PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()), "surrogateescape");
  if (object == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(object);
}

bool is_path_like(const py::handle &value) {
  return py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || py::hasattr(value, "__fspath__");
}

std::string fs_path(const py::handle &path, const char *what) {
  if (!is_path_like(path)) throw ArgumentTypeError(std::string(what) + ": expected a path (str or os.PathLike), got " + describe(path));
  const py::module_ os = py::module_::import("os");
  const py::bytes bytes = os.attr("fsencode")(os.attr("fspath")(path));
  return std::string(bytes);
}

namespace {

// archs as the CLI's comma-separated text: a str as it is, a list's names joined.
std::string archs_text(const py::handle &archs) {
  if (py::isinstance<py::str>(archs)) return archs.cast<std::string>();
  if (!py::isinstance<py::iterable>(archs) || py::isinstance<py::bytes>(archs))
    throw ArgumentTypeError("archs: expected None, \"sm_90,sm_87\" or a list of arch names, got " + describe(archs));
  std::string text;
  for (const py::handle item : archs) {
    if (!py::isinstance<py::str>(item))
      throw ArgumentTypeError("archs: expected arch names (str) such as \"sm_90\", got " + describe(item));
    text += (text.empty() ? "" : ",") + item.cast<std::string>();
  }
  return text;
}

}  // namespace

std::vector<Arch> archs_argument(const py::handle &archs) {
  if (archs.is_none()) return {};
  return Arch::parse_list(archs_text(archs));
}

void publish_archs(PublishRequest &request, const py::handle &archs) {
  if (!archs.is_none()) request.set_archs(archs_text(archs));
}

py::object from_json(const nlohmann::json &value) {
  switch (value.type()) {
    case nlohmann::json::value_t::null: return py::none();
    case nlohmann::json::value_t::boolean: return py::bool_(value.get<bool>());
    case nlohmann::json::value_t::number_integer: return py::int_(value.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: return py::int_(value.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float: return py::float_(value.get<double>());
    case nlohmann::json::value_t::string: return text(value.get_ref<const std::string &>());
    case nlohmann::json::value_t::array: {
      py::list out;
      for (const auto &item : value) out.append(from_json(item));
      return std::move(out);
    }
    case nlohmann::json::value_t::object: {
      py::dict out;
      for (const auto &[key, item] : value.items()) out[text(key)] = from_json(item);
      return std::move(out);
    }
    default: return py::none();  // binary, discarded: kiln writes neither
  }
}

py::dict to_dict(const StoreInfo &store) { return from_json(kiln::to_json(store)); }

py::dict to_dict(const DeviceIdentity &device) { return from_json(kiln::to_json(device)); }

py::dict to_dict(const DeviceReport &report) {
  py::dict out = from_json(kiln::to_json(report));
  py::list effective;  // what checks and builds use: the declared device, else the live ones
  for (const auto &device : report.effective()) effective.append(to_dict(device));
  out["effective"] = effective;
  return out;
}

py::dict to_dict(const ArtifactIdentity &identity) { return from_json(kiln::to_json(identity)); }
py::dict to_dict(const Compatibility &compatibility) { return from_json(kiln::to_json(compatibility)); }

py::list reasons_list(const std::vector<Reason> &reasons) {
  py::list out;
  for (const auto &reason : reasons) out.append(from_json(kiln::to_json(reason)));
  return out;
}

py::dict to_dict(const Resolution &resolution) { return from_json(kiln::to_json(resolution)); }

py::dict to_dict(const LoadReport &report) { return from_json(kiln::to_json(report)); }

py::dict to_dict(const ArtifactSummary &summary) { return from_json(kiln::to_json(summary)); }

py::dict to_dict(const PublishResult &result) { return from_json(kiln::to_json(result)); }

py::dict to_dict(const BuildPlan &plan) { return from_json(kiln::to_json(plan)); }

py::dict to_dict(const BuildResult &result) { return from_json(kiln::to_json(result)); }

py::dict to_dict(const BuildEvent &event) {
  static const char *const kinds[] = {"generator_started", "generator_finished", "unit_started", "unit_finished",
                                      "link_started",      "link_finished",      "units_queued"};
  py::dict out;
  out["kind"] = kinds[static_cast<int>(event.kind)];
  out["name"] = text(event.name);
  out["seconds"] = event.seconds;
  out["cached"] = event.cached;
  out["total"] = event.total;
  return out;
}

py::dict to_dict(const ToolStatus &tool) { return from_json(kiln::to_json(tool)); }

py::dict to_dict(const ToolchainReport &toolchain) { return from_json(kiln::to_json(toolchain)); }

}  // namespace kiln::python
