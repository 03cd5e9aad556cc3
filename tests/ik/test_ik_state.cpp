// kiln IK tests: warm start (KILN_IK_SOLVE_WARM_START) and the state a hot swap carries
// (export_state / import_state, the kiln.ik.state blob), on the host path (activate(-1)) for both
// robots; the "gpu" suite repeats the round trip on a device (test_ik_swap_gpu.cpp).
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include <kiln/ext/ik.h>

#include "ik_test_support.hpp"

namespace {

using kiln::test::ik::Batch;
using kiln::test::ik::Solver;
using kiln::test::ik::Trajectories;
namespace blob_at = kiln::test::ik::state_blob;

struct Robot {
  std::string name;
  std::string file;
};
const Robot kRobots[] = {{"iiwa14", KILN_IK_PLUGIN_IIWA14}, {"panda", KILN_IK_PLUGIN_PANDA}};

kiln_ik_options warm_options(bool warm) {
  kiln_ik_options o = kiln::test::ik::options();
  o.flags = warm ? KILN_IK_SOLVE_WARM_START : 0u;
  return o;
}

// One cycle: slots [0, count) at `cycle`, solved with or without warm start; returns the
// iterations per slot and leaves q etc. in batch.
std::vector<uint32_t> cycle_solve(Solver &solver, const Trajectories &paths, Batch &batch, uint32_t cycle, bool warm) {
  const kiln_ik_options options = warm_options(warm);
  batch.problem.options = &options;
  paths.targets(solver, batch.problem.count, cycle, batch.targets.data());
  char message[512] = "";
  const kiln_status status = solver.ik->solve(solver.instance.handle(), &batch.problem, &batch.result, message, sizeof message);
  REQUIRE_MESSAGE(status == KILN_OK, message);
  batch.problem.options = nullptr;
  for (uint32_t i = 0; i < batch.problem.count; ++i) CHECK(batch.converged[i] == 1);
  return std::vector<uint32_t>(batch.iterations.begin(), batch.iterations.begin() + batch.problem.count);
}

uint64_t sum(const std::vector<uint32_t> &values) { return std::accumulate(values.begin(), values.end(), uint64_t{0}); }

}  // namespace

TEST_CASE("ik warm start: a loop tracking moving targets converges in fewer iterations with KILN_IK_SOLVE_WARM_START") {
  for (const Robot &robot : kRobots) {
    CAPTURE(robot.name);
    const uint32_t slots = 4, cycles = 60;
    Solver warm(robot.file, -1, slots), cold(robot.file, -1, slots);
    const Trajectories paths(warm);
    Batch warm_batch(slots, warm.dof), cold_batch(slots, cold.dof);
    uint64_t warm_iterations = 0, cold_iterations = 0;
    for (uint32_t t = 0; t < cycles; ++t) {
      const uint64_t w = sum(cycle_solve(warm, paths, warm_batch, t, true));
      if (t > 0) warm_iterations += w;  // the first cycle has no previous solution
      if (t > 0) cold_iterations += sum(cycle_solve(cold, paths, cold_batch, t, false));
    }
    const double n = static_cast<double>(slots * (cycles - 1));
    MESSAGE(robot.name << ": mean iterations per target tracking a moving target: warm " << static_cast<double>(warm_iterations) / n
                       << ", cold " << static_cast<double>(cold_iterations) / n);
    CHECK(warm_iterations < cold_iterations);
  }
}

TEST_CASE("ik warm start: the same as passing the previous solution as initial_q; initial_q wins; empty slots start cold") {
  const uint32_t slots = 3;
  Solver flagged(KILN_IK_PLUGIN_IIWA14, -1, slots), manual(KILN_IK_PLUGIN_IIWA14, -1, slots),
      plain(KILN_IK_PLUGIN_IIWA14, -1, slots);
  const Trajectories paths(flagged);
  Batch a(slots, flagged.dof), b(slots, manual.dof), c(slots, plain.dof);
  char message[512] = "";

  SUBCASE("a fresh instance with the flag solves as without it (no slot has a solution)") {
    cycle_solve(flagged, paths, a, 0, true);
    cycle_solve(plain, paths, c, 0, false);
    CHECK(a.q == c.q);
    CHECK(a.iterations == c.iterations);
  }
  SUBCASE("with the flag, each cycle starts where the slot's last solution is") {
    cycle_solve(flagged, paths, a, 0, true);
    cycle_solve(manual, paths, b, 0, false);
    REQUIRE(a.q == b.q);
    for (uint32_t t = 1; t < 20; ++t) {
      const std::vector<float> previous = b.q;
      b.problem.initial_q = previous.data();
      cycle_solve(manual, paths, b, t, false);
      b.problem.initial_q = nullptr;
      cycle_solve(flagged, paths, a, t, true);
      CHECK(a.q == b.q);
      CHECK(a.iterations == b.iterations);
    }
  }
  SUBCASE("initial_q, when given, wins over the slot's solution") {
    cycle_solve(flagged, paths, a, 0, true);
    std::vector<float> truth(size_t{slots} * flagged.dof);
    for (uint32_t s = 0; s < slots; ++s) paths.at(s, 50, truth.data() + size_t{s} * flagged.dof);
    REQUIRE(flagged.ik->fk(flagged.instance.handle(), truth.data(), slots, a.targets.data()) == KILN_OK);
    const kiln_ik_options options = warm_options(true);
    a.problem.options = &options;
    a.problem.initial_q = truth.data();
    REQUIRE(flagged.ik->solve(flagged.instance.handle(), &a.problem, &a.result, message, sizeof message) == KILN_OK);
    for (uint32_t s = 0; s < slots; ++s) CHECK(a.iterations[s] <= 1);  // started at the answer
  }
  SUBCASE("info says the flag is honoured; an unknown flag bit is refused; an old-size options struct has no flags") {
    kiln_ik_info info{};
    info.struct_size = sizeof info;
    REQUIRE(flagged.ik->info(flagged.instance.handle(), &info) == KILN_OK);
    CHECK(info.solve_flags == KILN_IK_SOLVE_WARM_START);

    paths.targets(flagged, slots, 0, a.targets.data());
    kiln_ik_options bad = warm_options(true);
    bad.flags |= 0x80u;
    a.problem.options = &bad;
    CHECK(flagged.ik->solve(flagged.instance.handle(), &a.problem, &a.result, message, sizeof message) ==
          KILN_ERR_INVALID_ARGUMENT);
    CHECK(std::string(message).find("flags") != std::string::npos);

    // A host built before flags existed passes 32 bytes; whatever follows in its memory is not read.
    struct {
      kiln_ik_options head;
      unsigned char tail[8];
    } old{};
    old.head.struct_size = offsetof(kiln_ik_options, flags);
    old.head.flags = 0xffffffffu;
    a.problem.options = &old.head;
    CHECK(flagged.ik->solve(flagged.instance.handle(), &a.problem, &a.result, message, sizeof message) == KILN_OK);
  }
}

TEST_CASE("ik state: export after solves, import into a fresh instance: its next warm solve continues where the first left off") {
  for (const Robot &robot : kRobots) {
    CAPTURE(robot.name);
    const uint32_t slots = 4;
    Solver first(robot.file, -1, slots), second(robot.file, -1, slots), fresh(robot.file, -1, slots);
    const Trajectories paths(first);
    Batch a(slots, first.dof), b(slots, second.dof), c(slots, fresh.dof);
    for (uint32_t t = 0; t < 30; ++t) cycle_solve(first, paths, a, t, true);

    std::vector<unsigned char> blob;
    std::string message;
    REQUIRE_MESSAGE(first.export_state(blob, &message) == KILN_OK, message);
    CHECK(blob.size() == blob_at::kHeader + size_t{slots} * (1 + first.dof) * 4);
    CHECK(std::string(reinterpret_cast<const char *>(blob.data())) == "kiln.ik.state");
    CHECK(blob_at::word(blob, blob_at::kVersion) == 1);
    CHECK(blob_at::word(blob, blob_at::kDof) == first.dof);
    CHECK(blob_at::word(blob, blob_at::kSlots) == slots);
    CHECK(std::string(reinterpret_cast<const char *>(blob.data() + blob_at::kChain)).rfind("chain_", 0) == 0);
    for (uint32_t s = 0; s < slots; ++s) {  // the slots hold what the last solve returned
      CHECK(blob_at::valid(blob, first.dof, s) == 1);
      for (uint32_t j = 0; j < first.dof; ++j) CHECK(blob_at::joint(blob, first.dof, s, j) == a.q[s * first.dof + j]);
    }

    REQUIRE_MESSAGE(second.import_state(blob, &message) == KILN_OK, message);
    std::vector<unsigned char> again;
    REQUIRE(second.export_state(again) == KILN_OK);
    CHECK(again == blob);

    const std::vector<uint32_t> continued = cycle_solve(first, paths, a, 30, true);
    const std::vector<uint32_t> imported = cycle_solve(second, paths, b, 30, true);
    const std::vector<uint32_t> cold = cycle_solve(fresh, paths, c, 30, true);  // nothing to start from
    CHECK(imported == continued);
    CHECK(b.q == a.q);
    MESSAGE(robot.name << ": iterations of the solve after the import: " << sum(imported) << " over " << slots
                       << " targets; a fresh instance: " << sum(cold));
    CHECK(sum(imported) < sum(cold));
  }
}

TEST_CASE("ik state: sizes, empty and partial states, more slots than max_batch, inactive instances") {
  const uint32_t dof = 7;
  Solver small(KILN_IK_PLUGIN_IIWA14, -1, 2), large(KILN_IK_PLUGIN_IIWA14, -1, 8);
  const Trajectories paths(small);
  std::string message;

  SUBCASE("the NULL-buffer query gives the size; a smaller buffer is refused with the size needed") {
    size_t size = 0;
    char text[256] = "";
    REQUIRE(small.entry().export_state(small.instance.handle(), nullptr, 0, &size, text, sizeof text) == KILN_OK);
    CHECK(size == blob_at::kHeader + 2 * (1 + dof) * 4);
    std::vector<unsigned char> buffer(size - 1);
    size_t written = 0;
    CHECK(small.entry().export_state(small.instance.handle(), buffer.data(), buffer.size(), &written, text,
                                     sizeof text) == KILN_ERR_CAPACITY);
    CHECK(written == size);
    CHECK(std::string(text).find("needs") != std::string::npos);
    // Any alignment of the caller's buffer.
    std::vector<unsigned char> odd(size + 1);
    CHECK(small.entry().export_state(small.instance.handle(), odd.data() + 1, size, &written, text, sizeof text) ==
          KILN_OK);
  }
  SUBCASE("a fresh instance exports empty slots; importing them clears a state") {
    std::vector<unsigned char> empty;
    REQUIRE(large.export_state(empty) == KILN_OK);
    for (uint32_t s = 0; s < 8; ++s) CHECK(blob_at::valid(empty, dof, s) == 0);
    Batch batch(8, dof);
    cycle_solve(large, paths, batch, 0, true);
    std::vector<unsigned char> full;
    REQUIRE(large.export_state(full) == KILN_OK);
    CHECK(full != empty);
    REQUIRE(large.import_state(empty) == KILN_OK);
    std::vector<unsigned char> cleared;
    REQUIRE(large.export_state(cleared) == KILN_OK);
    CHECK(cleared == empty);
  }
  SUBCASE("a blob with fewer slots fills those; the others are empty") {
    Batch batch(2, dof);
    cycle_solve(small, paths, batch, 0, true);
    std::vector<unsigned char> blob;
    REQUIRE(small.export_state(blob) == KILN_OK);
    Batch eight(8, dof);
    cycle_solve(large, paths, eight, 5, true);  // every slot of `large` holds something before
    REQUIRE_MESSAGE(large.import_state(blob, &message) == KILN_OK, message);
    std::vector<unsigned char> out;
    REQUIRE(large.export_state(out) == KILN_OK);
    CHECK(blob_at::word(out, blob_at::kSlots) == 8);
    for (uint32_t s = 0; s < 8; ++s) CHECK(blob_at::valid(out, dof, s) == (s < 2 ? 1u : 0u));
    CHECK(std::equal(blob.begin() + blob_at::kHeader, blob.end(), out.begin() + blob_at::kHeader));
  }
  SUBCASE("a blob with more slots is accepted when those past max_batch are empty, else refused") {
    Batch two(2, dof);
    cycle_solve(large, paths, two, 0, true);  // slots 0, 1 of 8
    std::vector<unsigned char> blob;
    REQUIRE(large.export_state(blob) == KILN_OK);
    REQUIRE_MESSAGE(small.import_state(blob, &message) == KILN_OK, message);
    std::vector<unsigned char> out;
    REQUIRE(small.export_state(out) == KILN_OK);
    CHECK(std::equal(out.begin() + blob_at::kHeader, out.end(), blob.begin() + blob_at::kHeader));

    Batch eight(8, dof);
    cycle_solve(large, paths, eight, 1, true);  // now slot 7 holds a solution too
    REQUIRE(large.export_state(blob) == KILN_OK);
    CHECK(small.import_state(blob, &message) == KILN_ERR_CAPACITY);
    CHECK(message.find("slot 2") != std::string::npos);
    std::vector<unsigned char> unchanged;
    REQUIRE(small.export_state(unchanged) == KILN_OK);
    CHECK(unchanged == out);
  }
  SUBCASE("not active: export gives 0 slots; import is refused") {
    Solver idle(KILN_IK_PLUGIN_IIWA14, -1, std::nullopt);
    std::vector<unsigned char> blob;
    REQUIRE(idle.export_state(blob) == KILN_OK);
    CHECK(blob.size() == blob_at::kHeader);
    CHECK(blob_at::word(blob, blob_at::kSlots) == 0);
    std::vector<unsigned char> other;
    REQUIRE(small.export_state(other) == KILN_OK);
    CHECK(idle.import_state(other, &message) == KILN_ERR_STATE);
    CHECK(message.find("activate") != std::string::npos);
    Batch batch(2, dof);
    cycle_solve(small, paths, batch, 0, true);
    small.instance.deactivate();  // deactivate drops the state
    REQUIRE(small.export_state(blob) == KILN_OK);
    CHECK(blob_at::word(blob, blob_at::kSlots) == 0);
    small.instance.activate(-1, 2);
    REQUIRE(small.export_state(blob) == KILN_OK);
    for (uint32_t s = 0; s < 2; ++s) CHECK(blob_at::valid(blob, dof, s) == 0);
  }
  SUBCASE("import is refused while a solve is in flight") {
    std::vector<unsigned char> blob;
    REQUIRE(small.export_state(blob) == KILN_OK);
    Batch batch(2, dof);
    paths.targets(small, 2, 0, batch.targets.data());
    char text[256] = "";
    REQUIRE(small.ik->solve_async(small.instance.handle(), &batch.problem, &batch.result, text, sizeof text) == KILN_OK);
    CHECK(small.import_state(blob, &message) == KILN_ERR_STATE);
    CHECK(message.find("wait") != std::string::npos);
    REQUIRE(small.ik->wait(small.instance.handle(), text, sizeof text) == KILN_OK);
    CHECK(small.import_state(blob) == KILN_OK);
  }
}

TEST_CASE("ik state: import refuses another format, version, byte order, robot or dof, a truncated or malformed blob, "
          "and changes nothing") {
  const uint32_t slots = 2;
  Solver iiwa(KILN_IK_PLUGIN_IIWA14, -1, slots), panda(KILN_IK_PLUGIN_PANDA, -1, slots);
  const Trajectories iiwa_paths(iiwa), panda_paths(panda);
  Batch iiwa_batch(slots, iiwa.dof), panda_batch(slots, panda.dof);
  cycle_solve(iiwa, iiwa_paths, iiwa_batch, 0, true);
  cycle_solve(panda, panda_paths, panda_batch, 0, true);
  std::vector<unsigned char> good, before, panda_blob;
  REQUIRE(iiwa.export_state(good) == KILN_OK);
  REQUIRE(panda.export_state(panda_blob) == KILN_OK);
  cycle_solve(iiwa, iiwa_paths, iiwa_batch, 40, true);  // the state moves on; refused imports must not touch it
  REQUIRE(iiwa.export_state(before) == KILN_OK);
  REQUIRE(before != good);

  const auto refused = [&](const std::vector<unsigned char> &blob, kiln_status expected, const std::string &words) {
    std::string message;
    CHECK(iiwa.import_state(blob, &message) == expected);
    CHECK_MESSAGE(message.find(words) != std::string::npos, message);
    std::vector<unsigned char> after;
    REQUIRE(iiwa.export_state(after) == KILN_OK);
    CHECK(after == before);
  };
  std::vector<unsigned char> blob = good;
  SUBCASE("another format id") {
    blob[0] = 'X';
    refused(blob, KILN_ERR_UNSUPPORTED, "not a kiln.ik.state blob");
  }
  SUBCASE("another version") {
    blob_at::set_word(blob, blob_at::kVersion, 2);
    refused(blob, KILN_ERR_UNSUPPORTED, "version 2");
  }
  SUBCASE("another byte order") {
    blob_at::set_word(blob, blob_at::kByteOrder, 0x04030201u);
    refused(blob, KILN_ERR_UNSUPPORTED, "byte order");
  }
  SUBCASE("another dof") {
    blob_at::set_word(blob, blob_at::kDof, 6);
    refused(blob, KILN_ERR_UNSUPPORTED, "6 joints");
  }
  SUBCASE("another robot with the same dof") {
    refused(panda_blob, KILN_ERR_UNSUPPORTED, "panda");
    std::string message;
    iiwa.import_state(panda_blob, &message);
    CHECK(message.find("chain") != std::string::npos);
  }
  SUBCASE("truncated: in the format id, in the header, in the records; or longer than its header says") {
    refused(std::vector<unsigned char>(good.begin(), good.begin() + 10), KILN_ERR_INVALID_ARGUMENT, "truncated");
    refused(std::vector<unsigned char>(good.begin(), good.begin() + 40), KILN_ERR_INVALID_ARGUMENT, "truncated");
    refused(std::vector<unsigned char>(good.begin(), good.end() - 1), KILN_ERR_INVALID_ARGUMENT, "truncated");
    refused(std::vector<unsigned char>(good.begin(), good.begin() + blob_at::kHeader), KILN_ERR_INVALID_ARGUMENT,
            "truncated");
    blob.push_back(0);
    refused(blob, KILN_ERR_INVALID_ARGUMENT, "longer");
  }
  SUBCASE("a valid word other than 0 or 1, a joint value that is not finite") {
    blob_at::set_word(blob, blob_at::slot_offset(iiwa.dof, 1), 2);
    refused(blob, KILN_ERR_INVALID_ARGUMENT, "slot 1");
    blob = good;
    const float nan = std::nanf("");
    std::memcpy(blob.data() + blob_at::slot_offset(iiwa.dof, 0) + 4 * 3, &nan, sizeof nan);
    refused(blob, KILN_ERR_INVALID_ARGUMENT, "joint 2 is not finite");
  }
  SUBCASE("an empty blob; NULL with a size") {
    refused({}, KILN_ERR_INVALID_ARGUMENT, "truncated");
    char text[128] = "";
    CHECK(iiwa.entry().import_state(iiwa.instance.handle(), nullptr, 8, text, sizeof text) == KILN_ERR_INVALID_ARGUMENT);
  }
  SUBCASE("the unmodified blob is accepted") {
    std::string message;
    CHECK(iiwa.import_state(good, &message) == KILN_OK);
  }
}

TEST_CASE("ik state: export runs on another thread while the control thread keeps solving; every blob is whole") {
  const uint32_t slots = 4;
  Solver solver(KILN_IK_PLUGIN_IIWA14, -1, slots), checker(KILN_IK_PLUGIN_IIWA14, -1, slots);
  const Trajectories paths(solver);
  std::atomic<bool> done{false};
  std::atomic<uint32_t> solved{0};
  std::thread control([&] {
    Batch batch(slots, solver.dof);
    const kiln_ik_options options = warm_options(true);
    batch.problem.options = &options;
    char message[256] = "";
    for (uint32_t t = 0; t < 400; ++t) {
      paths.targets(solver, slots, t, batch.targets.data());
      if (solver.ik->solve(solver.instance.handle(), &batch.problem, &batch.result, message, sizeof message) != KILN_OK) {
        break;
      }
      solved.store(t + 1);
    }
    done.store(true);
  });
  size_t exports = 0, whole = 0;
  std::string failure;
  while (!done.load()) {
    // A whole blob: accepted by import (valid words 0/1, finite joints) and, once the first solve
    // was done before the export began, every slot holds a solution.
    const bool started = solved.load() > 0;
    std::vector<unsigned char> blob;
    std::string message;
    if (solver.export_state(blob, &message) != KILN_OK) {
      failure = message;
      break;
    }
    ++exports;
    bool ok = checker.import_state(blob, &message) == KILN_OK;
    if (started) {
      for (uint32_t s = 0; s < slots; ++s) ok = ok && blob_at::valid(blob, solver.dof, s) == 1;
    }
    whole += ok ? 1 : 0;
  }
  control.join();
  MESSAGE("exports while solving: " << exports << ", whole: " << whole << ", solves: " << solved.load());
  CHECK(failure.empty());
  CHECK(solved.load() == 400);
  CHECK(exports > 0);
  CHECK(whole == exports);
}
