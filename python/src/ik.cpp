// kiln.IK: the "kiln.ik/1" interface (abi/kiln/ext/ik.h) of a loaded plugin, over numpy arrays,
// built on the solver template (solver_binding.hpp): what is IK's own here is fk and solve.
//
// Inputs are float32 C-contiguous arrays, taken without a copy when they already are (else
// numpy converts once); outputs are new arrays per call, or the arrays of a previous result
// passed as out= (no allocation). Solves run with the GIL released. The header's rules:
//   - one thread at a time makes the [control-thread] call (solve) and the [setup-thread] ones
//     (activate, deactivate, close) on an instance: SolverInstance::control serialises them;
//     info, joint_info, dof and fk are [any-thread] and take no lock;
//   - host memory only (KILN_IK_MEMORY_HOST), the synchronous solve: inputs are read and outputs
//     written before solve() returns, so the arrays need to live only for the call;
//   - the plugin owns nothing of ours after a call; we own nothing of the plugin's but the
//     instance (kiln::Instance destroys it and keeps the code mapped until then).
#include <cstdint>
#include <limits>
#include <memory>

#include <pybind11/stl.h>

#include <kiln/ext/ik.h>

#include "bindings.hpp"
#include "errors.hpp"
#include "solver_binding.hpp"
#include "solver_common.hpp"

namespace kiln::python {

namespace {

// One solve's outputs: row i belongs to target i.
struct IKResult {
  py::array_t<float> q;                  // (n, dof)
  py::array_t<float> position_error;     // (n,) m
  py::array_t<float> orientation_error;  // (n,) rad
  py::array converged;                   // (n,) bool
  py::array_t<std::uint32_t> iterations; // (n,)
  py::ssize_t count = 0;
};

// kiln.ik/1 as the solver template sees it.
struct IkKind {
  KILN_SOLVER_BINDING_KIND(ik, IK);
  static void add_info(py::dict &, const kiln_ik_info &) {}
  static void add_joint(py::dict &item, const kiln_ik_joint_info &joint) {
    item["axis"] = py::make_tuple(joint.axis[0], joint.axis[1], joint.axis[2]);
  }
};

class IK : public SolverBinding<IkKind> {
 public:
  explicit IK(const Module &module) : SolverBinding(module) {}

  // (n, dof) joint vectors -> (n, 7) poses; a (dof,) vector -> a (7,) pose.
  py::array_t<float> fk(const py::object &q_arg, const py::object &out) const {
    const InArray<float> q = in_array<float>(q_arg, "fk: q", "(n, " + std::to_string(dof_) + ")");
    const std::uint32_t count = count_of(rows_of(q, dof_, "fk: q"), "rows");
    std::vector<py::ssize_t> shape{count, KILN_IK_POSE_SIZE};
    if (q.ndim() == 1) shape = {KILN_IK_POSE_SIZE};
    py::array_t<float> poses = output_array<float>(out, shape, "fk: out");
    const float *in = q.data();
    float *written = poses.mutable_data();
    kiln_status status = KILN_OK;
    {
      py::gil_scoped_release release;  // [any-thread]: not serialised with solve
      std::shared_lock<std::shared_mutex> alive(solver_.lifetime);
      status = table_->fk(solver_.handle(), in, count, written);
    }
    check(status, "fk");
    return poses;
  }

  IKResult solve(const py::object &targets_arg, const py::object &initial_q_arg, std::uint32_t max_iterations,
                 float position_tolerance, float orientation_tolerance, std::uint32_t seeds, float damping,
                 std::uint64_t random_seed, bool warm_start, const py::object &out) {
    const InArray<float> targets = in_array<float>(targets_arg, "solve: targets", "(n, 7)");
    const std::uint32_t count = count_of(rows_of(targets, KILN_IK_POSE_SIZE, "solve: targets"), "rows");
    std::optional<InArray<float>> initial_q;
    if (!initial_q_arg.is_none()) {
      initial_q = in_array<float>(initial_q_arg, "solve: initial_q", "(n, " + std::to_string(dof_) + ")");
      if (rows_of(*initial_q, dof_, "solve: initial_q") != count)
        throw ArgumentValueError("solve: initial_q has " + std::to_string(rows_of(*initial_q, dof_, "")) +
                              " rows, targets " + std::to_string(count));
    }
    const py::ssize_t n = count;
    IKResult result = reuse_or<IKResult>(out, n, {n, static_cast<py::ssize_t>(dof_)}, "kiln.IKResult", [&] {
      IKResult fresh;
      fresh.q = py::array_t<float>(std::vector<py::ssize_t>{n, static_cast<py::ssize_t>(dof_)});
      fresh.position_error = py::array_t<float>(n);
      fresh.orientation_error = py::array_t<float>(n);
      fresh.converged = bool_array(py::none(), n);
      fresh.iterations = py::array_t<std::uint32_t>(n);
      return fresh;
    });

    kiln_ik_options options = SolverBinding::options(max_iterations, position_tolerance, orientation_tolerance, seeds,
                                                     random_seed, warm_start);
    options.damping = damping;
    kiln_ik_problem problem = SolverBinding::problem(count, &options);
    problem.targets = targets.data();
    problem.initial_q = initial_q ? initial_q->data() : nullptr;

    solve_call(problem, SolverBinding::buffers(result));
    return result;
  }
};

}  // namespace

void bind_ik(py::module_ &m) {
  bind_result<IKResult>(m, "IKResult",
                        "One IK solve's outputs; row i is target i. Pass it as out= to reuse its arrays.")
      .def_readonly("q", &IKResult::q, "(n, dof) float32: the best joint vector of each target")
      .def_readonly("position_error", &IKResult::position_error, "(n,) float32, metres")
      .def_readonly("orientation_error", &IKResult::orientation_error, "(n,) float32, radians")
      .def_readonly("converged", &IKResult::converged, "(n,) bool: both errors within the tolerances")
      .def_readonly("iterations", &IKResult::iterations, "(n,) uint32: iterations run")
      .def("__repr__", [](const IKResult &r) {
        std::size_t converged = 0;
        const auto *flags = static_cast<const std::uint8_t *>(r.converged.data());
        for (py::ssize_t i = 0; i < r.count; ++i) converged += flags[i] != 0;
        return "<kiln.IKResult " + std::to_string(r.count) + " targets, " + std::to_string(converged) + " converged>";
      });

  bind_solver<IK>(m, "IK",
                  "The kiln.ik/1 interface of a new instance of a loaded plugin (abi/kiln/ext/ik.h). Poses are "
                  "x y z qw qx qy qz (metres; Hamilton quaternion, tip frame to base frame); joints in radians or "
                  "metres, chain order. info/joints/fk work at once; solve needs activate().",
                  "[{name, type, lower, upper, axis}] base to tip", 1024,
                  "Reserve everything a solve of up to max_batch targets uses. device -1: host only (the same "
                  "algorithm on this thread's CPU).",
                  "ik", "A kiln.IK over a new instance of this plugin (AbiError when it offers no kiln.ik/1).")
      .def("fk", &IK::fk, py::arg("q"), py::kw_only(), py::arg("out") = py::none(),
           "Forward kinematics on the host: (n, dof) -> (n, 7) poses ((dof,) -> (7,)). out=: a float32 array "
           "of that shape to write into.")
      .def("solve", &IK::solve, py::arg("targets"), py::arg("initial_q") = py::none(), py::kw_only(),
           py::arg("max_iterations") = 0u, py::arg("position_tolerance") = 0.0f,
           py::arg("orientation_tolerance") = 0.0f, py::arg("seeds") = 0u, py::arg("damping") = 0.0f,
           py::arg("random_seed") = std::uint64_t{0}, py::arg("warm_start") = false, py::arg("out") = py::none(),
           "Solve a batch: targets (n, 7) float32 (or (7,)), initial_q (n, dof) or None. 0 means the "
           "plugin's default for every option. Returns a kiln.IKResult (out=: a previous one of n rows, reused).");
}

}  // namespace kiln::python
