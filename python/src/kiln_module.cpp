// kiln._kiln: the compiled half of the `kiln` package (python/kiln/__init__.py re-exports it).
#include <pybind11/pybind11.h>

#include <kiln/version.hpp>

#include "bindings.hpp"
#include "errors.hpp"

PYBIND11_MODULE(_kiln, m) {
  namespace kp = kiln::python;
  m.doc() = "kiln: resolve, check, load and build GPU solver plugins (docs/python.md)";
  m.attr("__version__") = kiln::kVersion;
  m.attr("ABI_VERSION") = std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR);
  // Errors first: the other parts' defaults and docstrings may name them.
  kp::bind_errors(m);
  kp::bind_plugin_module(m);
  kp::bind_runtime(m);
  kp::bind_ik(m);
  kp::bind_trajopt(m);
}
