// kiln's typed errors as Python exception classes (kiln.Error and one subclass per kind).
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include <kiln/plugin.h>

namespace kiln::python {

namespace py = pybind11;

// Creates kiln.Error, UsageError, NotFoundError, ToolchainMissingError, IncompatibleError,
// AbiError, IntegrityError, IoError and BuildError on m and registers the translator of every
// kiln::Error escaping a binding.
void bind_errors(py::module_ &m);

// A solver interface call that did not return KILN_OK, as the kiln::Error its cause fits:
// the caller's misuse (bad argument, capacity, lifecycle) is a UsageError, a CUDA failure an
// Error of kind other (as Instance::activate reports KILN_ERR_DEVICE), anything else an AbiError.
[[noreturn]] void throw_status(kiln_status status, const std::string &what, const char *message);

}  // namespace kiln::python
