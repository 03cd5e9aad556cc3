// kiln::Error -> kiln.<Kind>Error. Each class carries exit_code and kind (class attributes: the
// CLI's exit code, docs/cli.md "Exit codes"); instances add the message's details: reasons
// (IncompatibleError, a list of dicts as --json prints them) and log (BuildError).
#include "errors.hpp"

#include <kiln/errors.hpp>

#include "convert.hpp"

namespace kiln::python {

namespace {

struct Classes {
  py::object error, usage, not_found, toolchain_missing, incompatible, abi, integrity, io, build, argument_type,
      argument_value;
};

// Leaked on purpose: exception classes live as long as the interpreter, and a static py::object
// would be decref'd after Python finalized.
Classes &classes() {
  static Classes *instance = new Classes();
  return *instance;
}

const char *kind_name(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::usage: return "usage";
    case ErrorKind::not_found: return "not_found";
    case ErrorKind::incompatible: return "incompatible";
    case ErrorKind::abi: return "abi";
    case ErrorKind::integrity: return "integrity";
    case ErrorKind::build: return "build";
    case ErrorKind::timeout: return "timeout";
    case ErrorKind::other: break;
  }
  return "other";
}

// base: one class, or a tuple of classes.
py::object make_class(py::module_ &m, const char *name, const py::object &base, ErrorKind kind, const char *doc) {
  const std::string qualified = std::string("kiln.") + name;
  PyObject *type = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, base.ptr(), nullptr);
  if (type == nullptr) throw py::error_already_set();
  py::object cls = py::reinterpret_steal<py::object>(type);
  cls.attr("exit_code") = static_cast<int>(kind);
  cls.attr("kind") = kind_name(kind);
  m.attr(name) = cls;
  return cls;
}

// The class of an error: by its C++ type where it has one, else by its kind (a plain
// kiln::Error of kind usage is a kiln.UsageError).
const py::object &class_of(const Error &error) {
  Classes &c = classes();
  if (dynamic_cast<const ToolchainMissingError *>(&error) != nullptr) return c.toolchain_missing;
  if (dynamic_cast<const IoError *>(&error) != nullptr) return c.io;
  if (dynamic_cast<const ArgumentTypeError *>(&error) != nullptr) return c.argument_type;
  if (dynamic_cast<const ArgumentValueError *>(&error) != nullptr) return c.argument_value;
  switch (error.kind()) {
    case ErrorKind::usage: return c.usage;
    case ErrorKind::not_found: return c.not_found;
    case ErrorKind::incompatible: return c.incompatible;
    case ErrorKind::abi: return c.abi;
    case ErrorKind::integrity: return c.integrity;
    case ErrorKind::build: return c.build;
    case ErrorKind::timeout:  // raised by hot swap only, which Python does not bind
    case ErrorKind::other: break;
  }
  return c.error;
}

void raise(const Error &error) {
  const py::object &cls = class_of(error);
  // "replace": a message may quote a compiler's bytes; it must still become a str.
  const std::string what = error.what();
  PyObject *message = PyUnicode_DecodeUTF8(what.data(), static_cast<Py_ssize_t>(what.size()), "replace");
  if (message == nullptr) throw py::error_already_set();
  py::object instance = cls(py::reinterpret_steal<py::object>(message));
  // Per instance too: a kiln::Error of kind usage raised as the base class still says 2.
  instance.attr("exit_code") = error.exit_code();
  instance.attr("kind") = kind_name(error.kind());
  py::list reasons;
  if (const auto *incompatible = dynamic_cast<const IncompatibleError *>(&error)) reasons = reasons_list(incompatible->reasons());
  instance.attr("reasons") = reasons;
  if (const auto *build = dynamic_cast<const BuildError *>(&error)) {
    const std::string &log = build->log();
    PyObject *text = PyUnicode_DecodeUTF8(log.data(), static_cast<Py_ssize_t>(log.size()), "replace");
    if (text == nullptr) throw py::error_already_set();
    instance.attr("log") = py::reinterpret_steal<py::object>(text);
  }
  PyErr_SetObject(cls.ptr(), instance.ptr());
}

const char *status_name(kiln_status status) {
  switch (status) {
    case KILN_OK: return "KILN_OK";
    case KILN_ERR_INVALID_ARGUMENT: return "KILN_ERR_INVALID_ARGUMENT";
    case KILN_ERR_UNSUPPORTED: return "KILN_ERR_UNSUPPORTED";
    case KILN_ERR_OUT_OF_MEMORY: return "KILN_ERR_OUT_OF_MEMORY";
    case KILN_ERR_DEVICE: return "KILN_ERR_DEVICE";
    case KILN_ERR_STATE: return "KILN_ERR_STATE";
    case KILN_ERR_CAPACITY: return "KILN_ERR_CAPACITY";
    case KILN_ERR_INTERNAL: return "KILN_ERR_INTERNAL";
  }
  return "unknown kiln_status";
}

}  // namespace

void bind_errors(py::module_ &m) {
  Classes &c = classes();
  const py::object exception = py::reinterpret_borrow<py::object>(PyExc_Exception);
  c.error = make_class(m, "Error", exception, ErrorKind::other,
                       "Every kiln failure. exit_code: the kiln CLI's exit code for it; kind: its kind's name; "
                       "reasons: differing fields (IncompatibleError), else empty.");
  c.error.attr("reasons") = py::list();
  c.usage = make_class(m, "UsageError", c.error, ErrorKind::usage, "A bad argument or name (exit code 2).");
  c.not_found = make_class(m, "NotFoundError", c.error, ErrorKind::not_found,
                           "A consumer, artifact, device index or file that does not exist (exit code 3).");
  c.toolchain_missing =
      make_class(m, "ToolchainMissingError", c.not_found, ErrorKind::not_found,
                 "No build toolchain for the recipe's backend (no nvcc, cmake or NVRTC; exit code 3).");
  c.incompatible = make_class(m, "IncompatibleError", c.error, ErrorKind::incompatible,
                              "The artifact does not fit this kiln or device; .reasons lists every differing "
                              "field as {field, recorded, current, note} (exit code 4).");
  c.abi = make_class(m, "AbiError", c.error, ErrorKind::abi,
                     "Not a kiln plugin, no common ABI version, or a broken answer or call (exit code 5).");
  c.integrity = make_class(m, "IntegrityError", c.error, ErrorKind::integrity,
                           "A digest, stamp or store safety check failed (exit code 6).");
  c.io = make_class(m, "IoError", c.error, ErrorKind::other, "An I/O failure (EACCES, EIO ...), with the path (exit code 1).");
  c.build = make_class(m, "BuildError", c.error, ErrorKind::build,
                       "A build step failed; .log holds its output (exit code 7).");
  c.build.attr("log") = "";
  c.argument_type = make_class(m, "ArgumentTypeError",
                               py::make_tuple(c.usage, py::reinterpret_borrow<py::object>(PyExc_TypeError)),
                               ErrorKind::usage, "An argument of the wrong type, named (a UsageError and a TypeError).");
  c.argument_value = make_class(m, "ArgumentValueError",
                                py::make_tuple(c.usage, py::reinterpret_borrow<py::object>(PyExc_ValueError)),
                                ErrorKind::usage,
                                "An argument of the wrong shape, dtype or value, named (a UsageError and a ValueError).");

  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const Error &error) {
      raise(error);
    }
  });
  // Module-local: other pybind11 modules' conversions keep their own errors.
  py::register_local_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer) std::rethrow_exception(pointer);
    } catch (const py::cast_error &error) {
      raise(ArgumentTypeError(std::string("an argument of the wrong type (") + error.what() +
                              "): see help() of the call for the types it takes"));
    }
  });
}

std::string describe(const py::handle &value) {
  const py::handle type = py::type::handle_of(value);
  std::string out = py::str(type.attr("__module__")).cast<std::string>();
  out = (out == "builtins" ? "" : out + ".") + py::str(type.attr("__qualname__")).cast<std::string>();
  if (py::hasattr(value, "shape") && py::hasattr(value, "dtype"))
    out += " of shape " + py::str(value.attr("shape")).cast<std::string>() + " and dtype " +
           py::str(value.attr("dtype")).cast<std::string>();
  return out;
}

void throw_status(kiln_status status, const std::string &what, const char *message) {
  std::string text = what + ": " + status_name(status);
  if (message != nullptr && message[0] != '\0') text += ": " + std::string(message);
  switch (status) {
    case KILN_ERR_INVALID_ARGUMENT:
    case KILN_ERR_STATE:
    case KILN_ERR_CAPACITY:
    case KILN_ERR_UNSUPPORTED: throw UsageError(text);
    case KILN_ERR_DEVICE:
    case KILN_ERR_OUT_OF_MEMORY: throw Error(ErrorKind::other, text);
    default: throw AbiError(text);
  }
}

}  // namespace kiln::python
