// kiln IK tests: loading an IK plugin through kiln::Runtime and filling kiln.ik/1 structs.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

#include <kiln/ext/ik.h>
#include <kiln/ext/selftest.h>
#include <kiln/runtime.hpp>

#include "kiln_ik_batch.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

namespace kiln::test::ik {

// A plugin file published into a temporary cache and loaded: the store, the runtime, the module.
struct LoadedPlugin : PublishedPlugin {
  explicit LoadedPlugin(const std::string &file, std::optional<std::string> declared_device = std::string("sm_90"))
      : PublishedPlugin(file, "ik-tests", KILN_IK_PLUGIN_ARCHS, std::move(declared_device)) {}
};

inline kiln_ik_options options(uint32_t seeds = 0, uint32_t max_iterations = 0, uint64_t random_seed = 0) {
  kiln_ik_options o{};
  o.struct_size = sizeof o;
  o.seeds_per_target = seeds;
  o.max_iterations = max_iterations;
  o.random_seed = random_seed;
  return o;
}

// Host-side buffers of one batch and the structs pointing at them.
using Batch = kiln_ik::HostBatch;

// A loaded plugin with one instance and its kiln.ik/1 table; activated unless max_batch is empty.
struct Solver {
  Solver(const std::string &file, int device, std::optional<uint32_t> max_batch,
         std::optional<std::string> declared_device = std::string("sm_90"))
      : plugin(file, std::move(declared_device)), instance(plugin.module->create_instance()),
        ik(instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID)) {
    if (ik == nullptr) throw std::runtime_error(file + " offers no " KILN_IK_INTERFACE_ID);
    dof = ik->dof(instance.handle());
    if (max_batch) instance.activate(device, *max_batch);
  }
  const kiln_plugin_entry &entry() const { return plugin.module->entry(); }

  // export_state into a vector sized by the NULL-buffer query; the status and message on failure.
  kiln_status export_state(std::vector<unsigned char> &blob, std::string *message = nullptr) const {
    char text[512] = "";
    size_t size = 0;
    kiln_status status = entry().export_state(instance.handle(), nullptr, 0, &size, text, sizeof text);
    if (status == KILN_OK) {
      blob.assign(size, 0);
      status = entry().export_state(instance.handle(), blob.data(), blob.size(), &size, text, sizeof text);
      blob.resize(size);
    }
    if (message != nullptr) *message = text;
    return status;
  }
  kiln_status import_state(const std::vector<unsigned char> &blob, std::string *message = nullptr) {
    char text[512] = "";
    const kiln_status status =
        entry().import_state(instance.handle(), blob.empty() ? nullptr : blob.data(), blob.size(), text, sizeof text);
    if (message != nullptr) *message = text;
    return status;
  }

  LoadedPlugin plugin;
  kiln::Instance instance;
  const kiln_ik_v1 *ik;
  uint32_t dof = 0;
};

// The kiln.ik.state blob (plugins/ik/README.md, "State"): where its header fields are.
namespace state_blob {
constexpr size_t kVersion = 16, kByteOrder = 20, kDof = 24, kSlots = 28, kChain = 32, kRobot = 64, kHeader = 96;
inline uint32_t word(const std::vector<unsigned char> &blob, size_t offset) {
  uint32_t value = 0;
  std::memcpy(&value, blob.data() + offset, sizeof value);
  return value;
}
inline void set_word(std::vector<unsigned char> &blob, size_t offset, uint32_t value) {
  std::memcpy(blob.data() + offset, &value, sizeof value);
}
// Slot i's valid word and joint j.
inline size_t slot_offset(uint32_t dof, uint32_t slot) { return kHeader + size_t{slot} * (1 + dof) * 4; }
inline uint32_t valid(const std::vector<unsigned char> &blob, uint32_t dof, uint32_t slot) {
  return word(blob, slot_offset(dof, slot));
}
inline float joint(const std::vector<unsigned char> &blob, uint32_t dof, uint32_t slot, uint32_t j) {
  float value = 0;
  std::memcpy(&value, blob.data() + slot_offset(dof, slot) + 4 * (1 + size_t{j}), sizeof value);
  return value;
}
}  // namespace state_blob

// Joint vectors of smooth trajectories inside the limits: slot s at cycle t, for a loop tracking
// moving targets (a few milliradians per cycle).
struct Trajectories {
  explicit Trajectories(const Solver &solver) {
    for (uint32_t j = 0; j < solver.dof; ++j) {
      kiln_ik_joint_info joint{};
      joint.struct_size = sizeof joint;
      if (solver.ik->joint_info(solver.instance.handle(), j, &joint) != KILN_OK) throw std::runtime_error("joint_info");
      middle.push_back((joint.lower + joint.upper) / 2);
      amplitude.push_back(std::min(0.5, (joint.upper - joint.lower) / 4));
    }
  }
  void at(uint32_t slot, uint32_t cycle, float *q) const {
    for (size_t j = 0; j < middle.size(); ++j) {
      const double phase = 0.004 * cycle * (1.0 + 0.3 * static_cast<double>(j)) + 0.9 * slot + 0.5 * static_cast<double>(j);
      q[j] = static_cast<float>(middle[j] + amplitude[j] * std::sin(phase));
    }
  }
  // Targets of slots [0, count) at cycle t, through the plugin's FK.
  void targets(const Solver &solver, uint32_t count, uint32_t cycle, float *poses) const {
    std::vector<float> q(size_t{count} * middle.size());
    for (uint32_t s = 0; s < count; ++s) at(s, cycle, q.data() + size_t{s} * middle.size());
    if (solver.ik->fk(solver.instance.handle(), q.data(), count, poses) != KILN_OK) throw std::runtime_error("fk");
  }
  std::vector<double> middle, amplitude;
};

}  // namespace kiln::test::ik
