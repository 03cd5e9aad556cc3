// Conversions between kiln's public types and Python values. Dicts use the keys of the CLI's
// --json output (kiln/json.hpp's forms for identities), so a script can move between the two.
#include "convert.hpp"

#include <kiln/json.hpp>
#include <kiln/version.h>

namespace kiln::python {

py::str text(const std::string &value) {
  PyObject *object = PyUnicode_DecodeUTF8(value.data(), static_cast<Py_ssize_t>(value.size()), "surrogateescape");
  if (object == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(object);
}

bool is_path_like(const py::handle &value) {
  return py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value) || py::hasattr(value, "__fspath__");
}

std::string fs_path(const py::handle &path) {
  const py::module_ os = py::module_::import("os");
  const py::bytes bytes = os.attr("fsencode")(os.attr("fspath")(path));
  return std::string(bytes);
}

std::vector<Arch> archs_argument(const py::handle &archs) {
  std::vector<Arch> out;
  if (archs.is_none()) return out;
  if (py::isinstance<py::str>(archs)) return Arch::parse_list(archs.cast<std::string>());
  for (const py::handle item : archs) out.push_back(Arch::parse(item.cast<std::string>()));
  return out;
}

py::list archs_list(const std::vector<Arch> &archs) {
  py::list out;
  for (const auto &arch : archs) out.append(text(arch.to_string()));
  return out;
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

py::dict to_dict(const StoreInfo &store) {
  py::dict out;
  out["root"] = text(store.root);
  out["writable"] = store.writable;
  out["origin"] = text(store.origin);
  return out;
}

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

static py::list strings(const std::vector<std::string> &values) {
  py::list out;
  for (const auto &value : values) out.append(text(value));
  return out;
}

py::list reasons_list(const std::vector<Reason> &reasons) {
  py::list out;
  for (const auto &reason : reasons) out.append(from_json(kiln::to_json(reason)));
  return out;
}

py::dict to_dict(const Resolution &r) {
  py::dict out;
  out["consumer"] = text(r.consumer);
  out["name"] = text(r.name);
  out["content_key"] = text(r.content_key);
  out["input_key"] = text(r.input_key);
  out["kind"] = text(r.kind);
  out["store"] = text(r.store_root);
  out["store_writable"] = r.store_writable;
  out["entry"] = text(r.entry_dir);
  out["file"] = text(r.file);
  out["digest"] = text(r.digest);
  out["size"] = r.size;
  out["updated"] = text(r.updated);
  out["identity"] = to_dict(r.identity);
  if (r.kind == "images") {
    py::list images;
    for (const auto &image : r.images) {
      py::dict item;
      item["file"] = text(image.file);
      item["kind"] = text(image.kind);
      item["arch"] = text(image.arch.to_string());
      item["digest"] = text(image.digest);
      item["size"] = image.size;
      if (image.kind == "fatbin") item["contains"] = archs_list(image.contains);
      images.append(item);
    }
    py::list kernels;
    for (const auto &kernel : r.kernels) {
      py::dict item;
      item["name"] = text(kernel.name);
      item["lowered_name"] = text(kernel.lowered_name);
      kernels.append(item);
    }
    out["images"] = images;
    out["kernels"] = kernels;
  }
  return out;
}

py::dict to_dict(const LoadReport &report) {
  py::dict out;
  out["resolution"] = to_dict(report.resolution);
  out["compatibility"] = to_dict(report.compatibility);
  out["device"] = report.device ? py::object(to_dict(*report.device)) : py::none();
  out["abi_version"] = text(std::to_string(KILN_ABI_VERSION_MAJOR_OF(report.abi_version)) + "." +
                            std::to_string(KILN_ABI_VERSION_MINOR_OF(report.abi_version)));
  out["plugin_id"] = text(report.plugin_id);
  out["plugin_version"] = text(report.plugin_version);
  out["interfaces"] = strings(report.interfaces);
  py::dict timings;
  timings["resolve_ms"] = report.timings.resolve_ms;
  timings["check_ms"] = report.timings.check_ms;
  timings["verify_ms"] = report.timings.verify_ms;
  timings["dlopen_ms"] = report.timings.dlopen_ms;
  timings["bind_ms"] = report.timings.bind_ms;
  timings["total_ms"] = report.timings.total_ms();
  out["timings"] = timings;
  return out;
}

py::dict to_dict(const ArtifactSummary &s) {
  py::dict out;
  out["consumer"] = text(s.consumer);
  out["name"] = text(s.name);
  out["content_key"] = text(s.content_key);
  out["kind"] = text(s.kind);
  out["store"] = text(s.store_root);
  out["store_writable"] = s.store_writable;
  out["shadowed"] = s.shadowed;
  out["updated"] = text(s.updated);
  if (!s.damaged.empty()) out["damaged"] = text(s.damaged);
  return out;
}

py::dict to_dict(const PublishResult &result) {
  py::dict out;
  out["content_key"] = text(result.content_key);
  out["entry"] = text(result.entry_dir);
  out["file"] = text(result.file);
  out["reused"] = result.reused;
  return out;
}

py::dict to_dict(const BuildPlan &plan) {
  py::dict out;
  out["consumer"] = text(plan.consumer);
  out["name"] = text(plan.name);
  out["input_key"] = text(plan.input_key);
  out["content_key"] = plan.content_key ? py::object(text(*plan.content_key)) : py::none();
  out["state"] = text(plan.state);
  out["source"] = text(plan.source);
  out["stale_reasons"] = reasons_list(plan.stale_reasons);
  out["archs"] = archs_list(plan.archs);
  out["backend"] = text(plan.backend);
  out["jit_toolchain"] = text(plan.jit_toolchain);
  out["nvcc"] = text(plan.nvcc);
  out["nvcc_version"] = text(plan.nvcc_version);
  out["host_compiler"] = text(plan.host_compiler);
  out["cmake"] = text(plan.cmake);
  out["cmake_version"] = text(plan.cmake_version);
  out["steps"] = strings(plan.steps);
  return out;
}

py::dict to_dict(const BuildResult &result) {
  py::dict out;
  out["consumer"] = text(result.consumer);
  out["name"] = text(result.name);
  out["outcome"] = text(kiln::to_string(result.outcome));
  out["input_key"] = text(result.input_key);
  out["content_key"] = text(result.content_key);
  out["entry"] = text(result.entry_dir);
  out["archs"] = archs_list(result.archs);
  py::list units;
  for (const auto &unit : result.units) {
    py::dict item;
    item["name"] = text(unit.name);
    item["cached"] = unit.cached;
    item["seconds"] = unit.seconds;
    units.append(item);
  }
  out["units"] = units;
  out["seconds"] = result.seconds;
  out["remote"] = result.remote.empty() ? py::object(py::none()) : py::object(text(result.remote));
  py::list uploads;
  for (const auto &upload : result.uploads) uploads.append(from_json(kiln::to_json(upload)));
  out["uploads"] = uploads;
  out["layer"] = result.layer.empty() ? py::object(py::none()) : py::object(text(result.layer));
  return out;
}

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

py::dict to_dict(const ToolStatus &tool) {
  py::dict out;
  out["found"] = tool.found;
  out["path"] = text(tool.path);
  out["version"] = text(tool.version);
  out["release"] = text(tool.release);
  out["searched"] = strings(tool.searched);
  out["detail"] = text(tool.detail);
  return out;
}

py::dict to_dict(const ToolchainReport &toolchain) {
  py::dict out;
  out["nvcc"] = to_dict(toolchain.nvcc);
  out["host_compiler"] = to_dict(toolchain.host_compiler);
  out["cmake"] = to_dict(toolchain.cmake);
  out["nvrtc"] = to_dict(toolchain.nvrtc);
  out["nvjitlink"] = to_dict(toolchain.nvjitlink);
  out["nvfatbin"] = to_dict(toolchain.nvfatbin);
  py::list archs;
  for (int cc : toolchain.nvrtc_archs) archs.append(cc);
  out["nvrtc_archs"] = archs;
  out["jit_identity"] = text(toolchain.jit_identity);
  return out;
}

}  // namespace kiln::python
