// kiln TrajOpt tests: loading a TrajOpt plugin through kiln::Runtime (published into a temporary
// store), batches, judging and the CPU reference of the translation unit's generated chain.
#pragma once

#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <kiln/ext/selftest.h>
#include <kiln/ext/trajopt.h>
#include <kiln/runtime.hpp>

#include "kiln_fk_chain.cuh"
#include "kiln_rnea_chain.cuh"
#include "kiln_trajopt_batch.hpp"
#include "kiln_trajopt_judge.hpp"
#include "kiln_trajopt_reference.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

namespace kiln::test::trajopt {

using Fk = kiln_fk::Chain;
using Dyn = kiln_rnea::Chain;
using Batch = kiln_trajopt_common::HostBatch;
using Goals = kiln_trajopt_common::Goals;
using Reference = kiln_trajopt_ref::Reference<Fk, Dyn, KILN_TRAJOPT_N>;
constexpr uint32_t kN = KILN_TRAJOPT_N;

// The plugin file: $<env> when set (a build carried elsewhere), else the one this build made.
inline std::string plugin_file(const char *env, const char *built) {
  const char *over = std::getenv(env);
  return over != nullptr && *over != '\0' ? over : built;
}

// A loaded plugin with one instance and its kiln.trajopt/1 table; activated unless max_batch is empty.
struct Solver {
  Solver(const std::string &file, int device, std::optional<uint32_t> max_batch,
         std::optional<std::string> declared_device = std::string("sm_90"))
      : plugin(file, "trajopt-tests", KILN_TRAJOPT_PLUGIN_ARCHS, std::move(declared_device)) {
    instance.emplace(plugin.module->create_instance());
    api = instance->interface<kiln_trajopt_v1>(KILN_TRAJOPT_INTERFACE_ID);
    if (api == nullptr) throw std::runtime_error(file + " offers no " KILN_TRAJOPT_INTERFACE_ID);
    if (max_batch) instance->activate(device, *max_batch);
  }
  kiln_instance *handle() const { return instance->handle(); }
  kiln_status solve(Batch &batch, std::string *message = nullptr) const {
    char text[512] = "";
    const kiln_status status = api->solve(handle(), &batch.problem, &batch.result, text, sizeof text);
    if (message != nullptr) *message = text;
    return status;
  }
  std::vector<unsigned char> export_state() const {
    char text[512] = "";
    size_t size = 0;
    const kiln_plugin_entry &entry = plugin.module->entry();
    if (entry.export_state(handle(), nullptr, 0, &size, text, sizeof text) != KILN_OK) throw std::runtime_error(text);
    std::vector<unsigned char> blob(size);
    if (entry.export_state(handle(), blob.data(), blob.size(), &size, text, sizeof text) != KILN_OK)
      throw std::runtime_error(text);
    return blob;
  }
  kiln_status import_state(const std::vector<unsigned char> &blob, std::string *message = nullptr) const {
    char text[512] = "";
    const kiln_status status = plugin.module->entry().import_state(handle(), blob.empty() ? nullptr : blob.data(),
                                                                   blob.size(), text, sizeof text);
    if (message != nullptr) *message = text;
    return status;
  }
  kiln_status selftest(std::string *message) const {
    const auto *table = instance->interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
    if (table == nullptr) throw std::runtime_error("no " KILN_SELFTEST_INTERFACE_ID);
    char text[512] = "";
    const kiln_status status = table->run(handle(), text, sizeof text);
    *message = text;
    return status;
  }

  PublishedPlugin plugin;
  std::optional<kiln::Instance> instance;
  const kiln_trajopt_v1 *api = nullptr;
};

inline Batch random_batch(uint32_t count, uint64_t seed, Goals goals, double delta = 0.5, float dt = 0.02f) {
  Batch b(Dyn::kDof, kN, count);
  kiln_trajopt_common::random_problems<Fk, Dyn>(b, seed, delta, dt, goals);
  return b;
}

inline kiln_trajopt_common::Judged judge(const Batch &b, uint32_t i) {
  return kiln_trajopt_common::judge<Fk, Dyn>(b, i, b.trajectory(i));
}

}  // namespace kiln::test::trajopt
