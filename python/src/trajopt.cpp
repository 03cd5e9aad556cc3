// kiln.TrajOpt: the "kiln.trajopt/1" interface (abi/kiln/ext/trajopt.h) of a loaded plugin, over
// numpy arrays, built on the solver template (solver_binding.hpp) as kiln.IK (ik.cpp) is; its own
// is solve and the horizon. The same rules as kiln.IK: float32 C-contiguous inputs taken without a
// copy when they already are; outputs new per call or a previous result's (out=); host memory
// and the synchronous solve only; solve/activate/deactivate/close serialised per instance,
// info/joint_info unlocked ([any-thread]); the GIL released around the solve.
#include <cstdint>
#include <limits>
#include <memory>

#include <pybind11/stl.h>

#include <kiln/ext/trajopt.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "solver_binding.hpp"
#include "solver_common.hpp"

namespace kiln::python {

namespace {

// One solve's outputs: index i belongs to problem i; trajectories have N + 1 knots (knot 0 = q0).
struct TrajOptResult {
  py::array_t<float> q, qd, torques;  // (n, N + 1, dof)
  py::array converged;                // (n,) bool
  py::array_t<float> position_error, orientation_error, position_violation, velocity_violation, torque_violation, cost;
  py::array_t<std::uint32_t> iterations;
  py::array within_limits;            // (n,) bool: the returned trajectory keeps every limit
  py::ssize_t count = 0;
};

// kiln.trajopt/1 as the solver template sees it.
struct TrajoptKind {
  KILN_SOLVER_BINDING_KIND(trajopt, TRAJOPT);
  static void add_info(py::dict &out, const kiln_trajopt_info &info) {
    out["horizon"] = info.horizon;
    out["tracking"] = (info.features & KILN_TRAJOPT_FEATURE_TRACKING) != 0;
    out["within_limits"] = (info.features & KILN_TRAJOPT_FEATURE_WITHIN_LIMITS) != 0;
  }
  static void add_joint(py::dict &item, const kiln_trajopt_joint_info &joint) {
    item["velocity_limit"] = joint.velocity_limit;
    item["effort_limit"] = joint.effort_limit;
    item["position_limited"] = joint.position_limited != 0;
  }
};

class TrajOpt : public SolverBinding<TrajoptKind> {
 public:
  explicit TrajOpt(const Module &module) : SolverBinding(module), horizon_(query_info().horizon) {}

  std::uint32_t horizon() const { return horizon_; }

  TrajOptResult solve(const py::object &q0_arg, const py::object &pose_goals_arg, const py::object &joint_goals_arg,
                      const py::object &goal_kinds_arg, const py::object &qd0_arg, const py::object &dt_arg,
                      const py::object &initial_arg, const py::object &track_poses_arg,
                      const py::object &track_weights_arg, std::uint32_t max_iterations, float position_tolerance,
                      float orientation_tolerance, std::uint32_t seeds, float goal_weight, float smoothness_weight,
                      float effort_weight, std::uint64_t random_seed, bool warm_start, bool warm_shift,
                      const py::object &out) {
    const std::string dof_shape = "(n, " + std::to_string(dof_) + ")";
    const InArray<float> q0 = in_array<float>(q0_arg, "solve: q0", dof_shape);
    const std::uint32_t count = count_of(rows_of(q0, dof_, "solve: q0"), "problems");

    // Every optional input: None, or an array of `count` rows of `width` values.
    auto rows_input = [&](const py::object &arg, std::size_t width, const char *what) -> std::optional<InArray<float>> {
      if (arg.is_none()) return std::nullopt;
      InArray<float> array = in_array<float>(arg, what, "(n, " + std::to_string(width) + ")");
      if (rows_of(array, width, what) != count)
        throw ArgumentValueError(std::string(what) + ": " + std::to_string(rows_of(array, width, what)) + " rows, q0 " +
                              std::to_string(count));
      return array;
    };
    const auto pose_goals = rows_input(pose_goals_arg, KILN_TRAJOPT_POSE_SIZE, "solve: pose_goals");
    const auto joint_goals = rows_input(joint_goals_arg, dof_, "solve: joint_goals");
    const auto qd0 = rows_input(qd0_arg, dof_, "solve: qd0");
    // Every optional input per knot: None, or an array (n, N, width).
    auto knots_input = [&](const py::object &arg, std::size_t width, const char *what) -> std::optional<InArray<float>> {
      if (arg.is_none()) return std::nullopt;
      const std::string shape = "(n, " + std::to_string(horizon_) + ", " + std::to_string(width) + ")";
      InArray<float> array = in_array<float>(arg, what, shape);
      if (static_cast<std::size_t>(array.size()) != std::size_t{horizon_} * width * count)
        throw ArgumentValueError(std::string(what) + ": expected " + shape + " with n = " + std::to_string(count) +
                                 ", got " + shape_text(array));
      return array;
    };
    const auto initial = knots_input(initial_arg, dof_, "solve: initial_trajectories");
    const auto track_poses = knots_input(track_poses_arg, KILN_TRAJOPT_POSE_SIZE, "solve: track_poses");
    const auto track_weights = knots_input(track_weights_arg, 2, "solve: track_weights");
    if (track_weights && !track_poses) throw ArgumentValueError("solve: track_weights without track_poses");
    const int given = (pose_goals ? 1 : 0) + (joint_goals ? 1 : 0) + (track_poses ? 1 : 0);
    if (given == 0)
      throw ArgumentValueError("solve: give pose_goals, joint_goals or track_poses (several: with goal_kinds)");

    // goal_kinds: given, or implied when only one kind of goal is (all joint goals: an array of 1s).
    std::optional<InArray<std::uint8_t>> goal_kinds;
    if (!goal_kinds_arg.is_none()) {
      goal_kinds = in_array<std::uint8_t>(goal_kinds_arg, "solve: goal_kinds", "(" + std::to_string(count) + ",)");
      if (goal_kinds->ndim() != 1 || goal_kinds->shape(0) != static_cast<py::ssize_t>(count))
        throw ArgumentValueError("solve: goal_kinds: expected shape (" + std::to_string(count) + ",), got " +
                              shape_text(*goal_kinds));
    } else if (given > 1) {
      throw ArgumentValueError("solve: more than one of pose_goals, joint_goals and track_poses given: say which each "
                            "problem uses with goal_kinds (0 pose, 1 joint, 2 track)");
    } else if (joint_goals || track_poses) {
      goal_kinds.emplace(static_cast<py::ssize_t>(count));
      std::fill_n(goal_kinds->mutable_data(), count,
                  std::uint8_t{joint_goals ? KILN_TRAJOPT_GOAL_JOINT : KILN_TRAJOPT_GOAL_TRACK});
    }

    kiln_trajopt_options options = SolverBinding::options(max_iterations, position_tolerance, orientation_tolerance,
                                                          seeds, random_seed, warm_start);
    options.goal_weight = goal_weight;
    options.smoothness_weight = smoothness_weight;
    options.effort_weight = effort_weight;
    if (warm_shift) options.flags |= KILN_TRAJOPT_SOLVE_WARM_SHIFT;
    // dt: a number (every problem) or one per problem.
    std::optional<InArray<float>> dt;
    if (!dt_arg.is_none()) {
      if (py::isinstance<py::float_>(dt_arg) || py::isinstance<py::int_>(dt_arg)) {
        options.dt = dt_arg.cast<float>();
      } else {
        dt = in_array<float>(dt_arg, "solve: dt", "(" + std::to_string(count) + ",)");
        if (dt->ndim() != 1 || dt->shape(0) != static_cast<py::ssize_t>(count))
          throw ArgumentValueError("solve: dt: a number or shape (" + std::to_string(count) + ",), got " + shape_text(*dt));
      }
    }

    TrajOptResult result = result_for(out, count);
    kiln_trajopt_problem problem = SolverBinding::problem(count, &options);
    problem.q0 = q0.data();
    problem.qd0 = qd0 ? qd0->data() : nullptr;
    problem.goal_kinds = goal_kinds ? goal_kinds->data() : nullptr;
    problem.pose_goals = pose_goals ? pose_goals->data() : nullptr;
    problem.joint_goals = joint_goals ? joint_goals->data() : nullptr;
    problem.dt = dt ? dt->data() : nullptr;
    problem.initial_trajectories = initial ? initial->data() : nullptr;
    problem.track_poses = track_poses ? track_poses->data() : nullptr;
    problem.track_weights = track_weights ? track_weights->data() : nullptr;

    kiln_trajopt_result buffers = SolverBinding::buffers(result);
    buffers.qd = result.qd.mutable_data();
    buffers.torques = result.torques.mutable_data();
    buffers.position_violation = result.position_violation.mutable_data();
    buffers.velocity_violation = result.velocity_violation.mutable_data();
    buffers.torque_violation = result.torque_violation.mutable_data();
    buffers.cost = result.cost.mutable_data();
    buffers.within_limits = static_cast<std::uint8_t *>(result.within_limits.mutable_data());
    solve_call(problem, buffers);
    return result;
  }

 private:
  TrajOptResult result_for(const py::object &out, std::uint32_t count) const {
    const py::ssize_t n = count;
    const std::vector<py::ssize_t> knots{n, static_cast<py::ssize_t>(horizon_) + 1, static_cast<py::ssize_t>(dof_)};
    return reuse_or<TrajOptResult>(out, n, knots, "kiln.TrajOptResult", [&] {
      TrajOptResult r;
      r.q = py::array_t<float>(knots);
      r.qd = py::array_t<float>(knots);
      r.torques = py::array_t<float>(knots);
      r.converged = bool_array(py::none(), n);
      for (auto *array : {&r.position_error, &r.orientation_error, &r.position_violation, &r.velocity_violation,
                          &r.torque_violation, &r.cost})
        *array = py::array_t<float>(n);
      r.iterations = py::array_t<std::uint32_t>(n);
      r.within_limits = bool_array(py::none(), n);
      return r;
    });
  }

  std::uint32_t horizon_ = 0;
};

}  // namespace

void bind_trajopt(py::module_ &m) {
  bind_result<TrajOptResult>(m, "TrajOptResult",
                             "One TrajOpt solve's outputs; index i is problem i, trajectories (n, N + 1, dof) with "
                             "knot 0 = q0. Pass it as out= to reuse its arrays.")
      .def_readonly("q", &TrajOptResult::q)
      .def_readonly("qd", &TrajOptResult::qd)
      .def_readonly("torques", &TrajOptResult::torques)
      .def_readonly("converged", &TrajOptResult::converged)
      .def_readonly("position_error", &TrajOptResult::position_error)
      .def_readonly("orientation_error", &TrajOptResult::orientation_error)
      .def_readonly("position_violation", &TrajOptResult::position_violation)
      .def_readonly("velocity_violation", &TrajOptResult::velocity_violation)
      .def_readonly("torque_violation", &TrajOptResult::torque_violation)
      .def_readonly("cost", &TrajOptResult::cost)
      .def_readonly("iterations", &TrajOptResult::iterations)
      .def_readonly("within_limits", &TrajOptResult::within_limits);

  bind_solver<TrajOpt>(m, "TrajOpt",
                       "The kiln.trajopt/1 interface of a new instance of a loaded plugin (abi/kiln/ext/trajopt.h): "
                       "batched trajectory optimisation over a horizon of N steps fixed when the plugin was built.",
                       "[{name, type, lower, upper, velocity_limit, effort_limit, position_limited}]", 64,
                       "device -1: host only.", "trajopt",
                       "A kiln.TrajOpt over a new instance of this plugin (AbiError when it offers no kiln.trajopt/1).")
      .def_property_readonly("horizon", &TrajOpt::horizon)
      .def("solve", &TrajOpt::solve, py::arg("q0"), py::kw_only(), py::arg("pose_goals") = py::none(),
           py::arg("joint_goals") = py::none(), py::arg("goal_kinds") = py::none(), py::arg("qd0") = py::none(),
           py::arg("dt") = py::none(), py::arg("initial_trajectories") = py::none(),
           py::arg("track_poses") = py::none(), py::arg("track_weights") = py::none(), py::arg("max_iterations") = 0u,
           py::arg("position_tolerance") = 0.0f, py::arg("orientation_tolerance") = 0.0f, py::arg("seeds") = 0u,
           py::arg("goal_weight") = 0.0f, py::arg("smoothness_weight") = 0.0f, py::arg("effort_weight") = 0.0f,
           py::arg("random_seed") = std::uint64_t{0}, py::arg("warm_start") = false, py::arg("warm_shift") = false,
           py::arg("out") = py::none(),
           "Plan a batch: q0 (n, dof); pose_goals (n, 7), joint_goals (n, dof) and/or track_poses (n, N, 7) "
           "with track_weights (n, N, 2) or None (several kinds: goal_kinds (n,) of 0 pose / 1 joint / 2 "
           "track); qd0 (n, dof) or None (at rest); dt a number or (n,); initial_trajectories (n, N, dof); "
           "warm_shift: start from the last plan advanced by one knot (a receding horizon's next tick). 0 "
           "means the plugin's default for every option. Returns a kiln.TrajOptResult (within_limits: the "
           "returned trajectory keeps every limit).");
}

}  // namespace kiln::python
