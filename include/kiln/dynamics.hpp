// kiln: a plugin's dynamics checked against the host's own model -- a probe: the plugin's
// kiln.robotmodel/1 rnea at a few states the host chooses, compared with the torques the host's
// model gives there. The model fingerprint (ModelRequirement, kiln/runtime.hpp) proves that a
// plugin kiln-urdf-fk generated was generated from the host's URDF; a probe checks what a plugin
// computes, whoever wrote it: an inertia off by a factor, a gravity of the wrong sign, a link
// mass from an older URDF all show at the first state that moves the joint.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <kiln/module.hpp>

namespace kiln {

// One state of the chain (dof values each, base to tip, rad or m) and what the host's model gives
// there: tau = M(q) qdd + C(q, qd) qd + G(q) under the plugin's gravity, without friction.
struct DynamicsState {
  std::vector<double> q, qd, qdd;
  std::vector<double> tau;
};

struct DynamicsProbeOptions {
  // A joint agrees where |plugin - host| <= absolute + relative * |host| (N m or N). The defaults
  // take a host model in double that sums in another order (KDL, Pinocchio): kiln's generated
  // RNEA agrees with KDL to 1e-12 N m.
  double absolute = 1e-6;
  double relative = 1e-6;
};

struct DynamicsProbeReport {
  std::size_t states = 0;
  double worst_difference = 0.0;  // |plugin - host| over every state and joint (N m or N)
  std::size_t worst_state = 0;    // where it was, and which joint (the plugin's name for it)
  std::string worst_joint;
};

// A probe as a file (kiln load --dynamics-probe FILE): JSON
//   {"states": [{"q": [...], "qd": [...], "qdd": [...], "tau": [...]}, ...],
//    "absolute": 1e-6, "relative": 1e-6}
// (the tolerances optional). UsageError naming the file and what in it is wrong.
struct DynamicsProbe {
  std::vector<DynamicsState> states;
  DynamicsProbeOptions options;
};
DynamicsProbe read_dynamics_probe(const std::string &file);

// [setup-thread] Asks `instance` (created by `module`, active or not) for the torques at every
// state and compares them with the host's. Throws UsageError for no states or a state whose
// vectors are not dof long or hold a non-finite value; IncompatibleError (field "dynamics") for a
// plugin without kiln.robotmodel/1 or without dynamics, and for a joint outside the tolerance,
// naming the state, the joint, both torques and the difference; AbiError when the plugin's rnea
// fails or throws.
DynamicsProbeReport probe_dynamics(const Module &module, const Instance &instance,
                                   const std::vector<DynamicsState> &states, const DynamicsProbeOptions &options = {});

}  // namespace kiln
