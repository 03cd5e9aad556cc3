// kiln's typed errors as Python exception classes (kiln.Error and one subclass per kind).
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include <kiln/errors.hpp>
#include <kiln/plugin.h>

namespace kiln::python {

namespace py = pybind11;

// A wrong argument, named with what was expected: kiln.ArgumentTypeError (a UsageError that is
// also a TypeError: an object of the wrong kind) and kiln.ArgumentValueError (also a ValueError:
// the right kind with a wrong shape, dtype or value), where Python code expects those.
struct ArgumentTypeError : UsageError {
  using UsageError::UsageError;
};
struct ArgumentValueError : UsageError {
  using UsageError::UsageError;
};

// "str", "numpy.ndarray of shape (3,) and dtype float64": what a wrong argument was, for messages.
std::string describe(const py::handle &value);

// value as T, or ArgumentTypeError "what: expected <expected>, got <what it is>".
template <class T>
T argument(const py::handle &value, const std::string &what, const char *expected) {
  try {
    return value.cast<T>();
  } catch (const py::cast_error &) {
    throw ArgumentTypeError(what + ": expected " + expected + ", got " + describe(value));
  }
}

// Creates kiln.Error, UsageError, NotFoundError, ToolchainMissingError, IncompatibleError,
// AbiError, IntegrityError, IoError, BuildError, ArgumentTypeError and ArgumentValueError on m and
// registers the translators of every kiln::Error escaping a binding and of pybind11's cast_error
// (a conversion the binding did not check first: ArgumentTypeError, not RuntimeError).
void bind_errors(py::module_ &m);

// A solver interface call that did not return KILN_OK, as the kiln::Error its cause fits:
// the caller's misuse (bad argument, capacity, lifecycle) is a UsageError, a CUDA failure an
// Error of kind other (as Instance::activate reports KILN_ERR_DEVICE), anything else an AbiError.
[[noreturn]] void throw_status(kiln_status status, const std::string &what, const char *message);

}  // namespace kiln::python
