// kiln.IK: the "kiln.ik/1" interface (abi/kiln/ext/ik.h) of a loaded plugin, over numpy arrays.
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

std::uint32_t count_of(std::size_t rows) {
  if (rows > std::numeric_limits<std::uint32_t>::max()) throw UsageError("kiln.ik/1: more than 2^32 - 1 rows");
  return static_cast<std::uint32_t>(rows);
}

class IK : public Solver {
 public:
  explicit IK(const Module &module)
      : Solver(module, KILN_IK_INTERFACE_ID, sizeof(kiln_ik_v1)), ik_(static_cast<const kiln_ik_v1 *>(solver_.table)) {
    dof_ = ik_->dof(solver_.handle());
  }

  std::uint32_t dof() const { return dof_; }

  py::dict info() const {
    kiln_ik_info info{};
    info.struct_size = sizeof info;
    check(ik_->info(solver_.handle(), &info), "info");
    py::dict out;
    out["dof"] = info.dof;
    out["max_seeds"] = info.max_seeds;
    out["max_batch"] = info.max_batch;
    out["device"] = info.device_ordinal;
    out["active"] = info.active != 0;
    out["device_bytes"] = info.device_bytes;
    out["host_bytes"] = info.host_bytes;
    out["robot"] = bounded_text(info.robot, sizeof info.robot);
    out["base_link"] = bounded_text(info.base_link, sizeof info.base_link);
    out["tip_link"] = bounded_text(info.tip_link, sizeof info.tip_link);
    out["source"] = bounded_text(info.source, sizeof info.source);
    out["warm_start"] = (info.solve_flags & KILN_IK_SOLVE_WARM_START) != 0;
    return out;
  }

  py::list joints() const {
    return joint_list<kiln_ik_joint_info>(
        dof_,
        [&](std::uint32_t j, kiln_ik_joint_info *joint) {
          check(ik_->joint_info(solver_.handle(), j, joint), "joint_info");
        },
        [](py::dict &item, const kiln_ik_joint_info &joint) {
          item["axis"] = py::make_tuple(joint.axis[0], joint.axis[1], joint.axis[2]);
        });
  }

  // (n, dof) joint vectors -> (n, 7) poses; a (dof,) vector -> a (7,) pose.
  py::array_t<float> fk(const InArray<float> &q, const py::object &out) const {
    const std::uint32_t count = count_of(rows_of(q, dof_, "fk: q"));
    std::vector<py::ssize_t> shape{count, KILN_IK_POSE_SIZE};
    if (q.ndim() == 1) shape = {KILN_IK_POSE_SIZE};
    py::array_t<float> poses = output_array<float>(out, shape);
    const float *in = q.data();
    float *written = poses.mutable_data();
    kiln_status status = KILN_OK;
    {
      py::gil_scoped_release release;  // [any-thread]: not serialised with solve
      std::shared_lock<std::shared_mutex> alive(solver_.lifetime);
      status = ik_->fk(solver_.handle(), in, count, written);
    }
    check(status, "fk");
    return poses;
  }

  IKResult solve(const InArray<float> &targets, const py::object &initial_q_arg, std::uint32_t max_iterations,
                 float position_tolerance, float orientation_tolerance, std::uint32_t seeds, float damping,
                 std::uint64_t random_seed, bool warm_start, const py::object &out) {
    const std::uint32_t count = count_of(rows_of(targets, KILN_IK_POSE_SIZE, "solve: targets"));
    std::optional<InArray<float>> initial_q;
    if (!initial_q_arg.is_none()) {
      initial_q = initial_q_arg.cast<InArray<float>>();
      if (rows_of(*initial_q, dof_, "solve: initial_q") != count)
        throw py::value_error("solve: initial_q has " + std::to_string(rows_of(*initial_q, dof_, "")) +
                              " rows, targets " + std::to_string(count));
    }
    IKResult result = result_for(out, count);

    kiln_ik_options options{};
    options.struct_size = sizeof options;
    options.max_iterations = max_iterations;
    options.position_tolerance = position_tolerance;
    options.orientation_tolerance = orientation_tolerance;
    options.seeds_per_target = seeds;
    options.damping = damping;
    options.random_seed = random_seed;
    options.flags = warm_start ? KILN_IK_SOLVE_WARM_START : 0u;

    kiln_ik_problem problem{};
    problem.struct_size = sizeof problem;
    problem.count = count;
    problem.memory = KILN_IK_MEMORY_HOST;
    problem.targets = targets.data();
    problem.initial_q = initial_q ? initial_q->data() : nullptr;
    problem.options = &options;
    problem.stream = nullptr;

    kiln_ik_result buffers{};
    buffers.struct_size = sizeof buffers;
    buffers.q = result.q.mutable_data();
    buffers.position_error = result.position_error.mutable_data();
    buffers.orientation_error = result.orientation_error.mutable_data();
    buffers.converged = static_cast<std::uint8_t *>(result.converged.mutable_data());
    buffers.iterations = result.iterations.mutable_data();

    solve_locked([&](kiln_instance *instance, char *message, std::size_t capacity) {
      return ik_->solve(instance, &problem, &buffers, message, capacity);
    });
    return result;
  }

 private:
  // out= when it is a result of count rows of this chain (its arrays are written again), else new arrays.
  IKResult result_for(const py::object &out, std::uint32_t count) const {
    const py::ssize_t n = count;
    if (!out.is_none()) {
      IKResult previous = out.cast<IKResult>();  // TypeError for anything else
      if (previous.count == n && previous.q.ndim() == 2 && previous.q.shape(1) == static_cast<py::ssize_t>(dof_))
        return previous;
    }
    IKResult result;
    result.count = n;
    result.q = py::array_t<float>(std::vector<py::ssize_t>{n, static_cast<py::ssize_t>(dof_)});
    result.position_error = py::array_t<float>(n);
    result.orientation_error = py::array_t<float>(n);
    result.converged = bool_array(py::none(), n);
    result.iterations = py::array_t<std::uint32_t>(n);
    return result;
  }

  const kiln_ik_v1 *ik_;
  std::uint32_t dof_ = 0;
};

}  // namespace

void bind_ik(py::module_ &m) {
  py::class_<IKResult>(m, "IKResult", "One IK solve's outputs; row i is target i. Pass it as out= to reuse its arrays.")
      .def_readonly("q", &IKResult::q, "(n, dof) float32: the best joint vector of each target")
      .def_readonly("position_error", &IKResult::position_error, "(n,) float32, metres")
      .def_readonly("orientation_error", &IKResult::orientation_error, "(n,) float32, radians")
      .def_readonly("converged", &IKResult::converged, "(n,) bool: both errors within the tolerances")
      .def_readonly("iterations", &IKResult::iterations, "(n,) uint32: iterations run")
      .def("__len__", [](const IKResult &r) { return r.count; })
      .def("__repr__", [](const IKResult &r) {
        std::size_t converged = 0;
        const auto *flags = static_cast<const std::uint8_t *>(r.converged.data());
        for (py::ssize_t i = 0; i < r.count; ++i) converged += flags[i] != 0;
        return "<kiln.IKResult " + std::to_string(r.count) + " targets, " + std::to_string(converged) + " converged>";
      });

  py::class_<IK> ik(m, "IK",
                    "The kiln.ik/1 interface of a new instance of a loaded plugin (abi/kiln/ext/ik.h). Poses are "
                    "x y z qw qx qy qz (metres; Hamilton quaternion, tip frame to base frame); joints in radians or "
                    "metres, chain order. info/joints/fk work at once; solve needs activate().");
  ik.def(py::init<const Module &>(), py::arg("module"))
      .def_property_readonly("dof", &IK::dof)
      .def("info", &IK::info, "robot, base_link, tip_link, source, dof, max_seeds, max_batch, device, active ...")
      .def("joints", &IK::joints, "[{name, type, lower, upper, axis}] base to tip")
      .def("fk", &IK::fk, py::arg("q"), py::kw_only(), py::arg("out") = py::none(),
           "Forward kinematics on the host: (n, dof) -> (n, 7) poses ((dof,) -> (7,)). out=: a float32 array "
           "of that shape to write into.");
  bind_lifecycle(ik, 1024,
                 "Reserve everything a solve of up to max_batch targets uses. device -1: host only (the same "
                 "algorithm on this thread's CPU).")
      .def("solve", &IK::solve, py::arg("targets"), py::arg("initial_q") = py::none(), py::kw_only(),
           py::arg("max_iterations") = 0u, py::arg("position_tolerance") = 0.0f,
           py::arg("orientation_tolerance") = 0.0f, py::arg("seeds") = 0u, py::arg("damping") = 0.0f,
           py::arg("random_seed") = std::uint64_t{0}, py::arg("warm_start") = false, py::arg("out") = py::none(),
           "Solve a batch: targets (n, 7) float32 (or (7,)), initial_q (n, dof) or None. 0 means the "
           "plugin's default for every option. Returns a kiln.IKResult (out=: a previous one of n rows, reused).");

  // module.ik(): the usual way in.
  py::class_<Module> module = py::reinterpret_borrow<py::class_<Module>>(m.attr("Module"));
  module.def(
      "ik", [](const Module &self) { return std::make_unique<IK>(self); },
      "A kiln.IK over a new instance of this plugin (AbiError when it offers no kiln.ik/1).");
}

}  // namespace kiln::python
