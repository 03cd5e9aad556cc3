// The template a solver interface's Python class is built from (kiln.IK, kiln.TrajOpt; a new
// solver kind's class too, docs/plugins.md): SolverBinding<Kind> is a Solver (solver_common.hpp:
// the instance, its locks, the lifecycle) over the interface's table, with what every solver
// interface offers alike: dof, info(), joints(), the host-memory problem and result structs of a
// solve, the locked synchronous solve call, out= reuse of a previous result. bind_solver and
// bind_result bind what is alike; a kind's own file adds its solve (and anything else it offers).
//
// Kind describes the interface: KILN_SOLVER_BINDING_KIND(kind, KIND) (its structs and constants by
// the ABI's names) and
//   static void add_info(py::dict &, const Info &)            the info fields of its own;
//   static void add_joint(py::dict &, const JointInfo &)      the joint fields of its own.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <pybind11/pybind11.h>

#include <kiln/errors.hpp>
#include <kiln/module.hpp>

#include "solver_common.hpp"

// In a Kind: what a solver interface kiln.<kind>/1 (abi/kiln/ext/<kind>.h) names by the ABI's
// pattern (kiln_<kind>_v1, kiln_<kind>_problem, KILN_<KIND>_SOLVE_WARM_START, ...).
#define KILN_SOLVER_BINDING_KIND(kind, KIND)                                  \
  using Table = kiln_##kind##_v1;                                             \
  using Info = kiln_##kind##_info;                                            \
  using JointInfo = kiln_##kind##_joint_info;                                 \
  using Options = kiln_##kind##_options;                                      \
  using Problem = kiln_##kind##_problem;                                      \
  using ResultBuffers = kiln_##kind##_result;                                 \
  static constexpr const char *kInterfaceId = KILN_##KIND##_INTERFACE_ID;     \
  static constexpr std::uint32_t kWarmStart = KILN_##KIND##_SOLVE_WARM_START; \
  static constexpr std::int32_t kMemoryHost = KILN_##KIND##_MEMORY_HOST

namespace kiln::python {

template <class Kind>
class SolverBinding : public Solver {
 public:
  using Table = typename Kind::Table;
  using Info = typename Kind::Info;

  std::uint32_t dof() const { return dof_; }

  // [any-thread] What the plugin reports about itself and its activation.
  py::dict info() const {
    const Info info = query_info();
    py::dict out;
    out["dof"] = info.dof;
    Kind::add_info(out, info);
    out["max_seeds"] = info.max_seeds;
    out["max_batch"] = info.max_batch;
    out["device"] = info.device_ordinal;
    out["active"] = info.active != 0;
    out["warm_start"] = (info.solve_flags & Kind::kWarmStart) != 0;
    out["device_bytes"] = info.device_bytes;
    out["host_bytes"] = info.host_bytes;
    out["robot"] = bounded_text(info.robot, sizeof info.robot);
    out["base_link"] = bounded_text(info.base_link, sizeof info.base_link);
    out["tip_link"] = bounded_text(info.tip_link, sizeof info.tip_link);
    out["source"] = bounded_text(info.source, sizeof info.source);
    return out;
  }

  // [any-thread] One dict per joint, base to tip.
  py::list joints() const {
    using JointInfo = typename Kind::JointInfo;
    return joint_list<JointInfo>(
        dof_,
        [&](std::uint32_t j, JointInfo *joint) { check(table_->joint_info(solver_.handle(), j, joint), "joint_info"); },
        &Kind::add_joint);
  }

 protected:
  explicit SolverBinding(const Module &module)
      : Solver(module, Kind::kInterfaceId, sizeof(Table)), table_(static_cast<const Table *>(solver_.table)) {
    dof_ = query_info().dof;
  }

  Info query_info() const {
    Info info{};
    info.struct_size = sizeof info;
    check(table_->info(solver_.handle(), &info), "info");
    return info;
  }

  // A batch's row count as the ABI's count; UsageError past 2^32 - 1 (`items`: "rows", "problems").
  static std::uint32_t count_of(std::size_t rows, const char *items) {
    if (rows > std::numeric_limits<std::uint32_t>::max())
      throw UsageError(std::string(Kind::kInterfaceId) + ": more than 2^32 - 1 " + items);
    return static_cast<std::uint32_t>(rows);
  }

  // The options every solver interface has; the kind sets its own after.
  static typename Kind::Options options(std::uint32_t max_iterations, float position_tolerance,
                                        float orientation_tolerance, std::uint32_t seeds, std::uint64_t random_seed,
                                        bool warm_start) {
    typename Kind::Options options{};
    options.struct_size = sizeof options;
    options.max_iterations = max_iterations;
    options.position_tolerance = position_tolerance;
    options.orientation_tolerance = orientation_tolerance;
    options.seeds_per_target = seeds;
    options.random_seed = random_seed;
    options.flags = warm_start ? Kind::kWarmStart : 0u;
    return options;
  }

  // A problem of count entries in host memory, solved synchronously (no stream); the kind points
  // it at its arrays.
  static typename Kind::Problem problem(std::uint32_t count, const typename Kind::Options *options) {
    typename Kind::Problem problem{};
    problem.struct_size = sizeof problem;
    problem.count = count;
    problem.memory = Kind::kMemoryHost;
    problem.options = options;
    problem.stream = nullptr;
    return problem;
  }

  // The result struct over a Python result's arrays, the fields every solver interface has (q,
  // position and orientation errors, converged, iterations); the kind points it at its others.
  template <class Result>
  static typename Kind::ResultBuffers buffers(Result &result) {
    typename Kind::ResultBuffers buffers{};
    buffers.struct_size = sizeof buffers;
    buffers.q = result.q.mutable_data();
    buffers.position_error = result.position_error.mutable_data();
    buffers.orientation_error = result.orientation_error.mutable_data();
    buffers.converged = static_cast<std::uint8_t *>(result.converged.mutable_data());
    buffers.iterations = result.iterations.mutable_data();
    return buffers;
  }

  // [control-thread] The synchronous solve, locked, its status checked.
  void solve_call(const typename Kind::Problem &problem, const typename Kind::ResultBuffers &buffers) {
    solve_locked([&](kiln_instance *instance, char *message, std::size_t capacity) {
      return table_->solve(instance, &problem, &buffers, message, capacity);
    });
  }

  // out= when it is a Result of count entries whose q has q_shape (its arrays are written again),
  // else make(): new arrays. ArgumentTypeError for an out= of another type (`result_name`: its
  // class as Python names it).
  template <class Result, class Make>
  static Result reuse_or(const py::object &out, py::ssize_t count, const std::vector<py::ssize_t> &q_shape,
                         const char *result_name, Make make) {
    if (!out.is_none()) {
      if (!py::isinstance<Result>(out))
        throw ArgumentTypeError(std::string("solve: out: expected a ") + result_name +
                                " of a previous solve (its arrays are written again) or None, got " + describe(out));
      Result previous = out.cast<Result>();
      if (previous.count == count && static_cast<std::size_t>(previous.q.ndim()) == q_shape.size() &&
          std::equal(q_shape.begin(), q_shape.end(), previous.q.shape()))
        return previous;
    }
    Result result = make();
    result.count = count;
    return result;
  }

  const Table *table_;
  std::uint32_t dof_ = 0;
};

// Binds a result struct: its arrays as read-only attributes are the caller's; len() is its count.
template <class Result>
py::class_<Result> bind_result(py::module_ &m, const char *name, const char *doc) {
  py::class_<Result> cls(m, name, doc);
  cls.def("__len__", [](const Result &r) { return r.count; });
  return cls;
}

// Binds a SolverBinding class T: its constructor from a Module, dof, info, joints, the lifecycle
// (bind_lifecycle), and Module.<module_method>() creating one. The kind adds its solve.
template <class T>
py::class_<T> bind_solver(py::module_ &m, const char *name, const char *doc, const char *joints_doc,
                          std::uint32_t default_max_batch, const char *activate_doc, const char *module_method,
                          const char *module_method_doc) {
  py::class_<T> cls(m, name, doc);
  cls.def(py::init<const Module &>(), py::arg("module"))
      .def_property_readonly("dof", &T::dof)
      .def("info", &T::info, "robot, base_link, tip_link, source, dof, max_seeds, max_batch, device, active ...")
      .def("joints", &T::joints, joints_doc);
  bind_lifecycle(cls, default_max_batch, activate_doc);
  py::class_<Module> module = py::reinterpret_borrow<py::class_<Module>>(m.attr("Module"));
  module.def(
      module_method, [](const Module &self) { return std::make_unique<T>(self); }, module_method_doc);
  return cls;
}

}  // namespace kiln::python
