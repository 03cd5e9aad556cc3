// What the solver interface classes (kiln.IK, kiln.TrajOpt) share: the instance they own, the
// lock that keeps the ABI's one-control-thread rule, the lifecycle methods and their bindings,
// numpy argument and result helpers.
#pragma once

#include <algorithm>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "convert.hpp"
#include "errors.hpp"

namespace kiln::python {

namespace py = pybind11;

// An input array: taken as is when it is already C-contiguous of dtype T (no copy), else
// converted once by numpy (forcecast).
template <class T>
using InArray = py::array_t<T, py::array::c_style | py::array::forcecast>;

// An array argument as InArray<T>: ArgumentTypeError naming it (`what`), the expected shape and
// dtype and what was given, where numpy cannot convert it (pybind11 would say only "incompatible
// function arguments" or "Unable to cast").
template <class T>
InArray<T> in_array(const py::handle &value, const char *what, const std::string &shape) {
  InArray<T> array = InArray<T>::ensure(value);
  if (!array)
    throw ArgumentTypeError(std::string(what) + ": expected an array of shape " + shape + " convertible to " +
                            py::str(py::dtype::of<T>()).template cast<std::string>() + ", got " + describe(value));
  return array;
}

// A plugin instance serving one interface table. The ABI lets only one thread at a time make
// the [control-thread] calls (solve) and the [setup-thread] ones (activate, deactivate) on an
// instance, while [any-thread] calls (info, fk) may run alongside: Python threads calling with
// the GIL released take `control` for the former, nothing for the latter.
struct SolverInstance {
  SolverInstance(const Module &module, const char *interface_id, std::size_t min_size)
      : instance(module.create_instance()) {
    table = instance->interface_table(interface_id, min_size);
    if (table == nullptr) {
      std::string offered;
      for (const auto &id : module.report().interfaces) offered += (offered.empty() ? "" : ", ") + id;
      throw AbiError(module.report().resolution.consumer + "/" + module.report().resolution.name + " (" +
                     module.report().plugin_id + ") offers no " + interface_id + "; it offers: " +
                     (offered.empty() ? "nothing" : offered));
    }
  }

  const kiln_instance *handle() const {
    if (!instance) throw UsageError("this solver instance was closed");
    return instance->handle();
  }
  kiln_instance *handle() {
    if (!instance) throw UsageError("this solver instance was closed");
    return instance->handle();
  }

  std::optional<Instance> instance;
  const void *table = nullptr;
  std::mutex control;
  // Held shared by the [any-thread] calls made without the GIL (fk), exclusively by close(): the
  // instance is never destroyed under a call in flight.
  mutable std::shared_mutex lifetime;
};

// The base of kiln.IK and kiln.TrajOpt: the [setup-thread] lifecycle calls, the status checks and
// the locked solve call are the same for every solver interface, so they live here once.
class Solver {
 public:
  void activate(int device, std::uint32_t max_batch, std::shared_ptr<GpuPartition> partition, int stream_priority) {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(solver_.control);
    solver_.handle();  // UsageError once closed
    solver_.instance->activate(activate_options(device, max_batch, std::move(partition), stream_priority));
  }

  void deactivate() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(solver_.control);
    if (solver_.instance) solver_.instance->deactivate();
  }

  bool active() const { return solver_.instance && solver_.instance->active(); }

  // Deactivates and destroys the instance now rather than when Python collects this object.
  void close() {
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(solver_.control);
    std::unique_lock<std::shared_mutex> alone(solver_.lifetime);
    solver_.instance.reset();
  }

 protected:
  Solver(const Module &module, const char *interface_id, std::size_t min_size)
      : solver_(module, interface_id, min_size), interface_id_(interface_id) {}

  // A call's status as the exception errors.hpp maps it to, named "<interface id> <call>".
  void check(kiln_status status, const char *call, const char *message = nullptr) const {
    if (status != KILN_OK) throw_status(status, interface_id_ + " " + call, message);
  }

  // The [control-thread] solve: solve(handle, message, capacity) runs with the GIL released and
  // the instance's control lock held (one at a time); its status is checked with its message.
  template <class Solve>
  void solve_locked(Solve solve) {
    char message[512] = {};
    kiln_status status = KILN_OK;
    {
      py::gil_scoped_release release;
      std::lock_guard<std::mutex> lock(solver_.control);
      status = solve(solver_.handle(), message, sizeof message);
    }
    message[sizeof message - 1] = '\0';
    check(status, "solve", message);
  }

  SolverInstance solver_;

 private:
  std::string interface_id_;
};

// Binds Solver's lifecycle methods on a solver class, once for both: the property active,
// activate (its max_batch default and doc differ per interface), deactivate, close and the
// context manager that closes.
template <class Class>
Class &bind_lifecycle(Class &cls, std::uint32_t default_max_batch, const char *activate_doc) {
  using T = typename Class::type;
  cls.def_property_readonly("active", &T::active)
      .def("activate", &T::activate, py::arg("device") = -1, py::arg("max_batch") = default_max_batch,
           py::arg("partition") = py::none(), py::arg("stream_priority") = 0, activate_doc)
      .def("deactivate", &T::deactivate)
      .def("close", &T::close, "Deactivate and destroy the instance now.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](T &solver, const py::args &) { solver.close(); });
  return cls;
}

// A NUL-terminated name field of capacity bytes, read without trusting the terminator.
inline py::str bounded_text(const char *field, std::size_t capacity) {
  std::size_t length = 0;
  while (length < capacity && field[length] != '\0') ++length;
  PyObject *object = PyUnicode_DecodeUTF8(field, static_cast<Py_ssize_t>(length), "replace");
  if (object == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(object);
}

inline const char *joint_type_name(std::int32_t type) {
  switch (type) {
    case 0: return "revolute";
    case 1: return "continuous";
    case 2: return "prismatic";
    default: return "unknown";
  }
}

// joints(): one dict per joint, base to tip. Every interface's joint info has name, type, lower
// and upper (these keys first); add(item, joint) writes the interface's own after them.
template <class JointInfo, class Query, class Add>
py::list joint_list(std::uint32_t dof, Query query, Add add) {
  py::list out;
  for (std::uint32_t j = 0; j < dof; ++j) {
    JointInfo joint{};
    joint.struct_size = sizeof joint;
    query(j, &joint);
    py::dict item;
    item["name"] = bounded_text(joint.name, sizeof joint.name);
    item["type"] = joint_type_name(joint.type);
    item["lower"] = joint.lower;
    item["upper"] = joint.upper;
    add(item, joint);
    out.append(item);
  }
  return out;
}

inline std::string shape_text(const py::array &array) {
  std::string out = "(";
  for (py::ssize_t i = 0; i < array.ndim(); ++i) out += (i > 0 ? ", " : "") + std::to_string(array.shape(i));
  return out + (array.ndim() == 1 ? ",)" : ")");
}

// The number of rows of a (rows, width) array, or 1 for a (width,) array; ValueError otherwise.
inline std::size_t rows_of(const py::array &array, std::size_t width, const char *what) {
  if (array.ndim() == 2 && static_cast<std::size_t>(array.shape(1)) == width) return static_cast<std::size_t>(array.shape(0));
  if (array.ndim() == 1 && static_cast<std::size_t>(array.shape(0)) == width) return 1;
  throw ArgumentValueError(std::string(what) + ": expected shape (n, " + std::to_string(width) + ") or (" +
                           std::to_string(width) + ",), got " + shape_text(array));
}

inline std::string shape_text(const std::vector<py::ssize_t> &shape) {
  std::string out = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(shape[i]);
  return out + (shape.size() == 1 ? ",)" : ")");
}

// An output array of dtype T and this shape: None gives a new one; `given` (out=, named `what`)
// must be one (C-contiguous, writeable; written in place, no allocation), else ArgumentValueError
// (an array of another shape or dtype) or ArgumentTypeError (not an array).
template <class T>
py::array_t<T> output_array(const py::object &given, const std::vector<py::ssize_t> &shape, const char *what) {
  if (given.is_none()) return py::array_t<T>(shape);
  const std::string expected = std::string(what) + ": expected a writeable C-contiguous " +
                               py::str(py::dtype::of<T>()).template cast<std::string>() + " array of shape " +
                               shape_text(shape) + ", got ";
  if (!py::isinstance<py::array>(given)) throw ArgumentTypeError(expected + describe(given));
  const py::array array = py::reinterpret_borrow<py::array>(given);
  const bool same_shape = static_cast<std::size_t>(array.ndim()) == shape.size() &&
                          std::equal(shape.begin(), shape.end(), array.shape());
  if (!py::isinstance<py::array_t<T>>(given) || !same_shape || (array.flags() & py::array::c_style) == 0 ||
      !array.writeable())
    throw ArgumentValueError(expected + describe(given) + (array.writeable() ? "" : " (read-only)"));
  return py::reinterpret_borrow<py::array_t<T>>(given);
}

// numpy bool (one byte, 0 or 1) for the ABI's uint8_t flags, written in place.
inline py::array bool_array(const py::object &given, py::ssize_t count) {
  const py::dtype dtype("bool");
  if (!given.is_none() && py::isinstance<py::array>(given)) {
    py::array array = py::reinterpret_borrow<py::array>(given);
    if (array.dtype().equal(dtype) && array.ndim() == 1 && array.shape(0) == count &&
        (array.flags() & py::array::c_style) != 0 && array.writeable())
      return array;
  }
  return py::array(dtype, std::vector<py::ssize_t>{count});
}

}  // namespace kiln::python
