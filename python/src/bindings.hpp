// The parts of the extension module kiln._kiln, one function per file.
#pragma once

#include <pybind11/pybind11.h>

namespace kiln::python {

namespace py = pybind11;

void bind_runtime(py::module_ &m);        // runtime.cpp: Runtime, Recipe
void bind_plugin_module(py::module_ &m);  // plugin_module.cpp: Module, Instance
void bind_ik(py::module_ &m);             // ik.cpp: IK, IKResult (kiln.ik/1)
void bind_trajopt(py::module_ &m);        // trajopt.cpp: TrajOpt, TrajOptResult (kiln.trajopt/1)

}  // namespace kiln::python
