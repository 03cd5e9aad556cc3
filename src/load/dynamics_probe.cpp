// probe_dynamics (kiln/dynamics.hpp): the plugin's kiln.robotmodel/1 rnea against the host's
// torques; read_dynamics_probe: a probe from its JSON file.
#include <kiln/dynamics.hpp>

#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>
#include <kiln/ext/robotmodel.h>

#include "files/files.hpp"
#include "load/boundary.hpp"

namespace kiln {
namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

}  // namespace

DynamicsProbe read_dynamics_probe(const std::string &file) {
  using nlohmann::json;
  const std::string text = files::read_file(file, files::FileOrigin::input, files::kMaxJsonFileBytes);
  const auto bad = [&](const std::string &why) {
    return UsageError("dynamics probe " + file + ": " + why +
                      " (expected {\"states\": [{\"q\": [...], \"qd\": [...], \"qdd\": [...], \"tau\": [...]}, ...], "
                      "optionally \"absolute\" and \"relative\" tolerances)");
  };
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception &error) {
    throw bad(std::string("not JSON: ") + error.what());
  }
  if (!root.is_object() || !root.contains("states") || !root["states"].is_array()) throw bad("no \"states\" array");
  DynamicsProbe probe;
  const auto numbers = [&](const json &state, const char *key, std::size_t index) {
    const std::string where = "state " + std::to_string(index) + "'s \"" + key + "\"";
    if (!state.is_object() || !state.contains(key) || !state[key].is_array()) throw bad(where + " is not an array");
    std::vector<double> values;
    for (const json &value : state[key]) {
      if (!value.is_number()) throw bad(where + " holds something other than a number");
      values.push_back(value.get<double>());
    }
    return values;
  };
  for (std::size_t i = 0; i < root["states"].size(); ++i) {
    const json &state = root["states"][i];
    probe.states.push_back({numbers(state, "q", i), numbers(state, "qd", i), numbers(state, "qdd", i),
                            numbers(state, "tau", i)});
  }
  for (const auto &[key, field] : {std::pair<const char *, double *>{"absolute", &probe.options.absolute},
                                   std::pair<const char *, double *>{"relative", &probe.options.relative}}) {
    if (!root.contains(key)) continue;
    if (!root[key].is_number() || !(root[key].get<double>() >= 0) || !std::isfinite(root[key].get<double>())) {
      throw bad(std::string("\"") + key + "\" is not a finite number >= 0");
    }
    *field = root[key].get<double>();
  }
  return probe;
}

DynamicsProbeReport probe_dynamics(const Module &module, const Instance &instance,
                                   const std::vector<DynamicsState> &states, const DynamicsProbeOptions &options) {
  const std::string &file = module.report().resolution.file;
  const std::string what = "the dynamics of " + module.report().plugin_id + " (" + file + ")";
  if (states.empty()) throw UsageError("a dynamics probe needs at least one state (q, qd, qdd and the host's tau)");
  const auto *model = instance.interface<kiln_robotmodel_v1>(KILN_ROBOTMODEL_INTERFACE_ID);
  if (model == nullptr) {
    throw IncompatibleError(what, {{"dynamics", "no " KILN_ROBOTMODEL_INTERFACE_ID, "a probe of rnea",
                                    "the plugin describes no robot model; only a plugin offering "
                                    KILN_ROBOTMODEL_INTERFACE_ID " with dynamics can be probed"}});
  }
  const std::uint32_t dof = load::call_plugin(file, "kiln.robotmodel/1 dof", [&] { return model->dof(instance.handle()); });
  // Every state is checked before the plugin runs: a wrong size is the host's mistake, not the plugin's.
  std::vector<double> q, qd, qdd, host;
  for (std::size_t s = 0; s < states.size(); ++s) {
    const DynamicsState &state = states[s];
    for (const auto *values : {&state.q, &state.qd, &state.qdd, &state.tau}) {
      if (values->size() != dof) {
        throw UsageError("dynamics probe state " + std::to_string(s) + " has a vector of " +
                         std::to_string(values->size()) + " values; the plugin's chain has " + std::to_string(dof) +
                         " joints: give q, qd, qdd and tau " + std::to_string(dof) + " values each");
      }
      for (const double value : *values) {
        if (!std::isfinite(value)) {
          throw UsageError("dynamics probe state " + std::to_string(s) + " holds a non-finite value: give finite numbers");
        }
      }
    }
    q.insert(q.end(), state.q.begin(), state.q.end());
    qd.insert(qd.end(), state.qd.begin(), state.qd.end());
    qdd.insert(qdd.end(), state.qdd.begin(), state.qdd.end());
    host.insert(host.end(), state.tau.begin(), state.tau.end());
  }
  if (states.size() > KILN_ROBOTMODEL_MAX_COUNT) {
    throw UsageError("a dynamics probe of " + std::to_string(states.size()) + " states: at most " +
                     std::to_string(KILN_ROBOTMODEL_MAX_COUNT) + " at once");
  }
  // Named only now: the host's own vectors have shown dof to be a size worth allocating for.
  std::vector<std::string> joint_names(dof);
  for (std::uint32_t j = 0; j < dof; ++j) {
    kiln_robotmodel_joint joint{};
    joint.struct_size = sizeof joint;
    char message[256] = "";
    const kiln_status status = load::call_plugin(file, "kiln.robotmodel/1 joint", [&] {
      return model->joint(instance.handle(), j, &joint, message, sizeof message);
    });
    joint_names[j] = status == KILN_OK ? load::bounded_string(joint.name, sizeof joint.name) : "joint " + std::to_string(j);
  }
  std::vector<double> tau(host.size());
  char message[256] = "";
  const kiln_status status = load::call_plugin(file, "kiln.robotmodel/1 rnea", [&] {
    return model->rnea(instance.handle(), q.data(), qd.data(), qdd.data(), static_cast<std::uint32_t>(states.size()),
                       tau.data(), message, sizeof message);
  });
  if (status == KILN_ERR_UNSUPPORTED) {
    throw IncompatibleError(what, {{"dynamics", "none (has_rnea 0)", "a probe of rnea",
                                    "the plugin was generated without dynamics: " + load::message_text(message)}});
  }
  if (status != KILN_OK) {
    throw AbiError(file + ": kiln.robotmodel/1 rnea failed (status " + std::to_string(status) +
                   "): " + load::message_text(message));
  }
  DynamicsProbeReport report;
  report.states = states.size();
  for (std::size_t i = 0; i < tau.size(); ++i) {
    const std::size_t s = i / dof, j = i % dof;
    const double difference = std::fabs(tau[i] - host[i]);
    // A NaN from the plugin is no agreement either.
    const bool agrees = difference <= options.absolute + options.relative * std::fabs(host[i]);
    if (!(difference <= report.worst_difference) || !agrees) {
      report.worst_difference = difference;
      report.worst_state = s;
      report.worst_joint = joint_names[j];
    }
    if (!agrees) {
      throw IncompatibleError(
          what, {{"dynamics", "plugin tau " + number(tau[i]), "host tau " + number(host[i]),
                  "state " + std::to_string(s) + ", joint " + joint_names[j] + ": the plugin's torque differs from the "
                  "host model's by " + number(difference) + " (tolerance " + number(options.absolute) + " + " +
                  number(options.relative) + " x |host|): the plugin was built from another robot model (masses, "
                  "inertias, frames or gravity); regenerate it from this robot's URDF"}});
    }
  }
  return report;
}

}  // namespace kiln
