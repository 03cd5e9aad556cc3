// kiln.Module (a loaded, negotiated plugin) and kiln.Instance (one plugin instance, generic).
// The solver interfaces have classes of their own (ik.cpp, trajopt.cpp); Instance is for the
// others: lifecycle plus the interface table's address, for ctypes.
#include <pybind11/stl.h>

#include <kiln/module.hpp>
#include <kiln/placement.hpp>
#include <kiln/version.hpp>

#include "bindings.hpp"
#include "convert.hpp"

namespace kiln::python {

void bind_plugin_module(py::module_ &m) {
  py::class_<GpuPartition, std::shared_ptr<GpuPartition>>(
      m, "GpuPartition",
      "A share of one device's SMs in a CUDA green context: an instance activated in it runs its "
      "kernels on those SMs only (docs/hot-swap.md, \"GPU isolation\").")
      .def_static(
          "split",
          [](int device, unsigned sm_count, double fraction) {
            GpuSplit split;
            {
              py::gil_scoped_release release;
              split = GpuPartition::split(device, SmShare{sm_count, fraction});
            }
            // The binding holds partitions as shared_ptr<GpuPartition>; kiln hands out const ones.
            const auto held = [](const std::shared_ptr<const GpuPartition> &p) -> py::object {
              if (!p) return py::none();
              return py::cast(std::const_pointer_cast<GpuPartition>(p));
            };
            return py::make_tuple(held(split.reserved), held(split.rest));
          },
          py::arg("device"), py::arg("sm_count") = 0u, py::arg("fraction") = 0.0,
          "(reserved, rest): sm_count SMs of device (or a fraction in (0, 1) of them; the driver rounds "
          "up) and the SMs left (None when the share took them all).")
      .def_property_readonly("device", &GpuPartition::device)
      .def_property_readonly("sm_count", &GpuPartition::sm_count)
      .def_property_readonly("device_sm_count", &GpuPartition::device_sm_count)
      .def("__repr__", [](const GpuPartition &p) { return text("<kiln.GpuPartition " + p.describe() + ">"); });

  py::class_<Instance>(m, "Instance",
                       "One plugin instance (create -> activate -> interface calls -> deactivate -> destroy); "
                       "keeps its plugin's code mapped while it lives.")
      .def(
          "activate",
          [](Instance &instance, int device, std::uint32_t max_batch, std::shared_ptr<GpuPartition> partition,
             int stream_priority) {
            py::gil_scoped_release release;
            instance.activate(activate_options(device, max_batch, std::move(partition), stream_priority));
          },
          py::arg("device") = -1, py::arg("max_batch") = 1, py::arg("partition") = py::none(),
          py::arg("stream_priority") = 0,
          "Device ordinal, or -1: host only; optionally in a kiln.GpuPartition of that device and with "
          "the plugin's streams at stream_priority (0 default, negative first).")
      .def(
          "deactivate",
          [](Instance &instance) {
            py::gil_scoped_release release;
            instance.deactivate();
          })
      .def_property_readonly("active", &Instance::active)
      .def(
          "interface_address",
          [](const Instance &instance, const std::string &id, std::size_t min_size) -> py::object {
            const void *table = instance.interface_table(id.c_str(), min_size);
            if (table == nullptr) return py::none();
            return py::int_(reinterpret_cast<std::uintptr_t>(table));
          },
          py::arg("id"), py::arg("min_size") = sizeof(std::uint32_t),
          "The address of interface id's table (None when not offered), for ctypes: valid while this "
          "Instance lives. The table must be at least min_size bytes (its struct_size is checked).")
      .def_property_readonly("handle", [](const Instance &instance) {
        return reinterpret_cast<std::uintptr_t>(instance.handle());
      }, "The kiln_instance * the interface functions take, as an int (ctypes).");

  py::class_<Module>(m, "Module",
                     "A loaded, negotiated plugin. Unloaded once it and all its instances are gone.")
      .def_property_readonly("report", [](const Module &module) { return to_dict(module.report()); },
                             "The load report: resolution, compatibility, device, abi_version, plugin_id, "
                             "plugin_version, interfaces, timings (as `kiln load --json`).")
      .def_property_readonly("plugin_id", [](const Module &module) { return text(module.report().plugin_id); })
      .def_property_readonly("plugin_version", [](const Module &module) { return text(module.report().plugin_version); })
      .def_property_readonly("interfaces", [](const Module &module) {
        py::list out;
        for (const auto &id : module.report().interfaces) out.append(text(id));
        return out;
      })
      .def_property_readonly("abi_version", [](const Module &module) { return abi_version_text(module.abi_version()); })
      .def_property_readonly("content_key", [](const Module &module) { return text(module.report().resolution.content_key); })
      .def_property_readonly("file", [](const Module &module) { return text(module.report().resolution.file); })
      .def(
          "create_instance",
          [](const Module &module) {
            py::gil_scoped_release release;
            return module.create_instance();
          },
          "A new kiln.Instance (not activated).")
      .def("keep_mapped", &Module::keep_mapped,
           "Keep the plugin's code mapped for the rest of the process (plugins whose device code the CUDA "
           "runtime registered at load).")
      .def("__repr__", [](const Module &module) {
        const auto &report = module.report();
        return text("<kiln.Module " + report.resolution.consumer + "/" + report.resolution.name + " " +
                    report.plugin_id + " " + report.plugin_version + ">");
      });
}

}  // namespace kiln::python
