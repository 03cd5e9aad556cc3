// kiln IK tests: the IK plugins built on miss by kiln from their recipes
// (<build>/plugins/ik/recipes/<robot>.json, configured from plugins/ik/recipes/*.json.in), not
// by CMake: nvcc through a counting wrapper, declared devices, a temporary store.
//
// Compiling the solver takes several seconds per arch, so the builds run once per test process
// (concurrently, through the CLI) into one shared store that the cases below share: iiwa14 for
// sm_90 and sm_87, panda for sm_90, and the variants iiwa14-b and iiwa14-broken for sm_90. The gpu
// case builds for the live device ("native") into a store of its own.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/ext/ik.h>
#include <kiln/ext/robotmodel.h>
#include <kiln/ext/selftest.h>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "artifact/model_record.hpp"
#include "ik/ik_solve_check.hpp"
#include "support/fixtures.hpp"

namespace {

namespace fs = boost::filesystem;
using kiln::test::read_text;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::write_text;

std::string recipe_file(const std::string &robot) { return std::string(KILN_IK_RECIPES_DIR) + "/" + robot + ".json"; }

std::string quote(const std::string &text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

struct NvccCalls {
  int compiles = 0;
  int links = 0;
  int total = 0;  // every call, --version included
};

// The store the builds share, built once per process on first use.
class RecipeStore {
 public:
  struct Build {
    std::string robot;
    std::string arch;
    int exit_code = -1;
    std::string err;
    nlohmann::json out;
  };

  RecipeStore()
      : nvcc_("KILN_NVCC", std::string(KILN_TEST_SOURCE_DIR) + "/tests/data/build/nvcc-wrapper.sh"),
        log_("KILN_TEST_NVCC_LOG", (dir_ / "nvcc.log").string()),
        delay_("KILN_TEST_NVCC_DELAY", std::nullopt) {
    write_text(dir_ / "nvcc.log", "");
    // Three CLI processes at once, into one consumer: the compiles share the cores, and
    // concurrent builds of different input keys must not disturb one another.
    const std::vector<std::pair<std::string, std::string>> wanted = {
        {"iiwa14", "sm_90"}, {"iiwa14", "sm_87"}, {"panda", "sm_90"}, {"iiwa14-b", "sm_90"}, {"iiwa14-broken", "sm_90"}};
    std::string script;
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      const std::string out = (dir_ / ("build" + std::to_string(i))).string();
      script += "env KILN_CACHE_DIR=" + quote(cache().string()) + " " + quote(KILN_CLI_PATH) + " build --json --arch " +
                wanted[i].second + " " + quote(recipe_file(wanted[i].first)) + " >" + quote(out + ".out") + " 2>" +
                quote(out + ".err") + " & p" + std::to_string(i) + "=$!\n";
    }
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      script += "wait $p" + std::to_string(i) + "; echo $? >" + quote((dir_ / ("build" + std::to_string(i))).string() + ".rc") +
                "\n";
    }
    write_text(dir_ / "builds.sh", script);
    kiln::test::run_shell("sh " + quote((dir_ / "builds.sh").string()));
    for (std::size_t i = 0; i < wanted.size(); ++i) {
      const fs::path base = dir_ / ("build" + std::to_string(i));
      Build build;
      build.robot = wanted[i].first;
      build.arch = wanted[i].second;
      build.err = read_text(fs::path(base.string() + ".err"));
      std::istringstream(read_text(fs::path(base.string() + ".rc"))) >> build.exit_code;
      build.out = nlohmann::json::parse(read_text(fs::path(base.string() + ".out")), nullptr, false);
      builds_.push_back(std::move(build));
    }
    build_calls_ = take();
  }

  // nvcc calls the builds above made (taken right after them).
  const NvccCalls &build_calls() const { return build_calls_; }

  const std::vector<Build> &builds() const { return builds_; }
  const Build &build(const std::string &robot, const std::string &arch) const {
    for (const auto &b : builds_) {
      if (b.robot == robot && b.arch == arch) return b;
    }
    throw std::logic_error("no build of " + robot + " for " + arch);
  }
  fs::path cache() const { return dir_ / "cache"; }

  kiln::RuntimeOptions options(const std::string &declared) const {
    kiln::RuntimeOptions options;
    options.cache_dir = cache().string();
    options.declared_device = declared;
    return options;
  }

  // nvcc calls since the last take.
  NvccCalls take() {
    NvccCalls calls;
    std::istringstream lines(read_text(dir_ / "nvcc.log"));
    for (std::string line; std::getline(lines, line);) {
      ++calls.total;
      if (line.rfind("-c ", 0) == 0) ++calls.compiles;
      if (line.rfind("--shared", 0) == 0) ++calls.links;
    }
    write_text(dir_ / "nvcc.log", "");
    return calls;
  }

 private:
  TempDir dir_;
  ScopedEnv nvcc_, log_, delay_;
  std::vector<Build> builds_;
  NvccCalls build_calls_;
};

RecipeStore &shared_store() {
  static RecipeStore store;
  return store;
}

struct Joint {
  double lower = 0, upper = 0;
};

std::vector<Joint> joints_of(const kiln_ik_v1 &ik, const kiln::Instance &instance) {
  std::vector<Joint> joints;
  for (uint32_t j = 0; j < ik.dof(instance.handle()); ++j) {
    kiln_ik_joint_info info{};
    info.struct_size = sizeof info;
    REQUIRE(ik.joint_info(instance.handle(), j, &info) == KILN_OK);
    joints.push_back({info.lower, info.upper});
  }
  return joints;
}

// Solves count targets (FK of random in-limit joint vectors) and counts the solutions whose
// pose, recomputed with the plugin's host FK, is within 1 mm / 0.01 rad, with every joint
// inside its limits. The instance must be active with max_batch >= count.
std::size_t solve_and_judge(const kiln_ik_v1 &ik, kiln::Instance &instance, uint32_t count, uint64_t seed) {
  const std::vector<Joint> joints = joints_of(ik, instance);
  const std::size_t dof = joints.size();
  std::mt19937_64 rng(seed);
  std::vector<float> truth(count * dof), targets(std::size_t{count} * KILN_IK_POSE_SIZE), q(count * dof);
  for (std::size_t i = 0; i < count; ++i) {
    for (std::size_t j = 0; j < dof; ++j) {
      truth[i * dof + j] =
          static_cast<float>(std::uniform_real_distribution<double>(joints[j].lower, joints[j].upper)(rng));
    }
  }
  REQUIRE(ik.fk(instance.handle(), truth.data(), count, targets.data()) == KILN_OK);
  kiln_ik_problem problem{};
  problem.struct_size = sizeof problem;
  problem.count = count;
  problem.memory = KILN_IK_MEMORY_HOST;
  problem.targets = targets.data();
  kiln_ik_result result{};
  result.struct_size = sizeof result;
  result.q = q.data();
  char message[512] = "";
  REQUIRE_MESSAGE(ik.solve(instance.handle(), &problem, &result, message, sizeof message) == KILN_OK, message);

  std::vector<float> poses(std::size_t{count} * KILN_IK_POSE_SIZE);
  REQUIRE(ik.fk(instance.handle(), q.data(), count, poses.data()) == KILN_OK);
  std::size_t good = 0;
  for (std::size_t i = 0; i < count; ++i) {
    const auto [position, orientation] = kiln::test::ik::pose_error(targets.data() + i * KILN_IK_POSE_SIZE,
                                                                    poses.data() + i * KILN_IK_POSE_SIZE);
    bool inside = true;
    for (std::size_t j = 0; j < dof; ++j) {
      inside = inside && q[i * dof + j] >= joints[j].lower && q[i * dof + j] <= joints[j].upper;
    }
    good += (inside && position < 1e-3 && orientation < 1e-2) ? 1 : 0;
  }
  return good;
}

const kiln_ik_v1 *ik_of(const kiln::Instance &instance) {
  return instance.interface<kiln_ik_v1>(KILN_IK_INTERFACE_ID);
}

}  // namespace

TEST_CASE("ik recipes: configured with absolute paths, the built kiln-urdf-fk as generator tool, archs native") {
  for (const std::string robot : {"iiwa14", "panda"}) {
    CAPTURE(robot);
    const kiln::Recipe recipe = kiln::Recipe::load(recipe_file(robot));
    CHECK(recipe.consumer == "kiln-ik");
    CHECK(recipe.name == robot);
    CHECK(recipe.backend == "nvcc");
    CHECK(recipe.artifact == "libkiln_ik_" + robot + ".so");
    CHECK(recipe.archs == std::vector<std::string>{"native"});
    REQUIRE(recipe.sources.size() == 1);
    CHECK(fs::path(recipe.sources[0]).filename() == "ik_plugin.cu");
    CHECK(fs::path(recipe.sources[0]).is_absolute());
    CHECK(std::any_of(recipe.headers.begin(), recipe.headers.end(),
                      [](const std::string &h) { return fs::is_directory(h) && fs::path(h).filename() == "common"; }));
    // plugins/common (what kiln.ik shares with kiln.trajopt) keys the build too, and is on the include path.
    const auto shared = [](const std::string &h) { return fs::exists(fs::path(h) / "kiln_state_blob.hpp"); };
    CHECK(std::any_of(recipe.headers.begin(), recipe.headers.end(), shared));
    CHECK(std::any_of(recipe.include_dirs.begin(), recipe.include_dirs.end(), shared));
    CHECK(recipe.defines == std::vector<std::string>{"KILN_IK_PLUGIN_ID=\"org.kiln.ik." + robot + "\""});
    REQUIRE(recipe.generators.size() == 1);
    const kiln::GeneratorStep &generator = recipe.generators[0];
    CHECK(fs::equivalent(generator.tool, KILN_URDF_FK_PATH));  // the tool's bytes key the build
    CHECK(generator.command.front() == "{tool}");
    CHECK(generator.outputs == std::vector<std::string>{"kiln_fk_chain.cuh"});
    REQUIRE(generator.inputs.size() == 1);
    CHECK(fs::path(generator.inputs[0]).filename() == robot + ".urdf");
  }
  // Without a device, "native" needs --arch or a declared device; the message says so.
  TempDir dir;
  kiln::RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  kiln::Runtime runtime(options);
  if (runtime.devices().state != kiln::DriverState::ok) {
    try {
      runtime.plan(kiln::Recipe::load(recipe_file("iiwa14")));
      FAIL("planned \"native\" without a device");
    } catch (const kiln::UsageError &error) {
      CHECK(std::string(error.what()).find("--arch") != std::string::npos);
    }
  }
  kiln::BuildOptions sm87;
  sm87.archs = {kiln::Arch::parse("sm_87")};
  const kiln::BuildPlan plan = runtime.plan(kiln::Recipe::load(recipe_file("iiwa14")), sm87);
  CHECK(plan.state == "missing");
  CHECK(plan.archs.size() == 1);
  CHECK_FALSE(fs::exists(dir / "cache"));  // a plan writes nothing
}

TEST_CASE("ik recipes: the variants iiwa14-b and iiwa14-broken are iiwa14's recipe with their name, artifact and defines") {
  const kiln::Recipe base = kiln::Recipe::load(recipe_file("iiwa14"));
  const std::map<std::string, std::vector<std::string>> variants = {
      {"iiwa14-b",
       {"KILN_IK_PLUGIN_ID=\"org.kiln.ik.iiwa14\"", "KILN_IK_INITIAL_DAMPING=0.05f", "KILN_IK_MAX_ITERATIONS_CAP=96u",
        "KILN_IK_VARIANT=\"b\""}},
      {"iiwa14-broken",
       {"KILN_IK_PLUGIN_ID=\"org.kiln.ik.iiwa14\"", "KILN_IK_FAULT_WRONG_ANSWERS", "KILN_IK_VARIANT=\"broken\""}}};
  for (const auto &[name, defines] : variants) {
    CAPTURE(name);
    const kiln::Recipe recipe = kiln::Recipe::load(recipe_file(name));
    CHECK(recipe.consumer == base.consumer);  // another artifact of the same consumer: a swap target
    CHECK(recipe.name == name);
    CHECK(recipe.artifact == "libkiln_ik_" + name + ".so");
    CHECK(recipe.defines == defines);
    CHECK(recipe.sources == base.sources);
    CHECK(recipe.headers == base.headers);
    CHECK(recipe.include_dirs == base.include_dirs);
    CHECK(recipe.flags == base.flags);
    CHECK(recipe.archs == base.archs);
    REQUIRE(recipe.generators.size() == 1);
    CHECK(recipe.generators[0].command == base.generators[0].command);
    CHECK(recipe.generators[0].inputs == base.generators[0].inputs);
  }
}

TEST_CASE("ik recipes: build on miss through the CLI, for declared sm_90 and sm_87 (--arch): one nvcc compile each") {
  RecipeStore &store = shared_store();
  const NvccCalls &calls = store.build_calls();
  std::map<std::string, std::string> keys;
  for (const auto &build : store.builds()) {
    CAPTURE(build.robot);
    CAPTURE(build.arch);
    REQUIRE_MESSAGE(build.exit_code == 0, build.err);
    REQUIRE(build.out.is_object());
    CHECK(build.out["outcome"] == "built");
    CHECK(build.out["archs"] == nlohmann::json::array({build.arch}));
    CHECK(build.out["consumer"] == "kiln-ik");
    CHECK(build.out["name"] == build.robot);
    keys[build.robot + "/" + build.arch] = build.out["content_key"].get<std::string>();
    const fs::path entry = build.out["entry"].get<std::string>();
    CHECK(fs::is_regular_file(entry / ("libkiln_ik_" + build.robot + ".so")));
    const auto identity = nlohmann::json::parse(read_text(entry / "identity.json"));
    CHECK(identity["archs"] == nlohmann::json::array({build.arch}));
    CHECK(identity["provenance"].contains("generator.fk-chain"));
    // The robot model the generator wrote into the plugin is recorded with it.
    const auto models = kiln::robot_model_texts((entry / ("libkiln_ik_" + build.robot + ".so")).string());
    REQUIRE(models.size() == 1);
    REQUIRE(identity.contains("models"));
    CHECK(identity["models"] == nlohmann::json::array({{{"fingerprint", kiln::artifact::model_fingerprint_of(models[0])},
                                                        {"chain", kiln::artifact::model_chain_of(models[0])}}}));
    MESSAGE(build.robot << " for " << build.arch << ": built in " << build.out["seconds"].get<double>() << " s");
  }
  CHECK(calls.compiles == static_cast<int>(store.builds().size()));  // one unit per build, never twice
  CHECK(calls.links == static_cast<int>(store.builds().size()));
  CHECK(keys.size() == store.builds().size());
  CHECK(keys["iiwa14/sm_90"] != keys["iiwa14/sm_87"]);
  CHECK(keys["iiwa14/sm_90"] != keys["panda/sm_90"]);
  CHECK(keys["iiwa14/sm_90"] != keys["iiwa14-b/sm_90"]);
  CHECK(keys["iiwa14/sm_90"] != keys["iiwa14-broken/sm_90"]);

  // The header kiln generated is the one CMake generates: same tool, same URDF, same chain.
  const fs::path entry = store.build("iiwa14", "sm_90").out["entry"].get<std::string>();
  CHECK(read_text(entry / "gen" / "kiln_fk_chain.cuh") == read_text(KILN_IK_HEADER_IIWA14));
  const fs::path panda = store.build("panda", "sm_90").out["entry"].get<std::string>();
  CHECK(read_text(panda / "gen" / "kiln_fk_chain.cuh") == read_text(KILN_IK_HEADER_PANDA));
}

TEST_CASE("ik recipes: a second ensure is a hit (no nvcc at all); the manifest follows the arch asked for") {
  RecipeStore &store = shared_store();
  REQUIRE(store.build("iiwa14", "sm_90").exit_code == 0);
  REQUIRE(store.build("iiwa14", "sm_87").exit_code == 0);
  store.take();
  const kiln::Recipe recipe = kiln::Recipe::load(recipe_file("iiwa14"));
  {
    kiln::Runtime runtime(store.options("sm_90"));  // "native" = the declared sm_90
    CHECK(runtime.build(recipe).outcome == kiln::BuildResult::Outcome::hit);
    kiln::Module module = runtime.ensure(recipe);
    CHECK(module.report().resolution.content_key == store.build("iiwa14", "sm_90").out["content_key"]);
    CHECK(module.report().compatibility.ok);
    CHECK(module.report().compatibility.how.find("sm_90") != std::string::npos);
  }
  {
    kiln::Runtime runtime(store.options("sm_87,integrated=1"));  // an Orin: the exact arch only
    kiln::Module module = runtime.ensure(recipe);
    CHECK(module.report().resolution.content_key == store.build("iiwa14", "sm_87").out["content_key"]);
    CHECK(module.report().compatibility.ok);
  }
  CHECK(store.take().total == 0);  // not even nvcc --version: the toolchain is remembered
  {
    // The manifest now names the sm_87 build: a plain load for sm_90 is refused, field named.
    kiln::Runtime runtime(store.options("sm_90"));
    try {
      runtime.load("kiln-ik", "iiwa14");
      FAIL("an sm_87 build loaded for sm_90");
    } catch (const kiln::IncompatibleError &error) {
      CHECK(std::string(error.what()).find("sm_87") != std::string::npos);
    }
    // ensure puts it back, still without compiling.
    kiln::Module module = runtime.ensure(recipe);
    CHECK(module.report().resolution.content_key == store.build("iiwa14", "sm_90").out["content_key"]);
    CHECK(runtime.load("kiln-ik", "iiwa14").report().resolution.content_key ==
          store.build("iiwa14", "sm_90").out["content_key"]);
  }
  CHECK(store.take().compiles == 0);
}

TEST_CASE("ik recipes: the built plugins negotiate, answer kiln.ik/1 and solve on the host") {
  RecipeStore &store = shared_store();
  struct Expect {
    std::string robot, plugin_id, robot_name, base, tip, source;
    double tip_at_zero[3];  // robots/README.md, "Reference values"
  };
  const std::vector<Expect> expected = {
      {"iiwa14", "org.kiln.ik.iiwa14", "lbr_iiwa", "lbr_iiwa_link_0", "lbr_iiwa_link_7", "iiwa14.urdf", {0.0, 0.0, 1.261}},
      {"panda", "org.kiln.ik.panda", "panda", "panda_link0", "panda_grasptarget", "panda.urdf", {0.088, 0.0, 0.821}}};
  for (const Expect &e : expected) {
    CAPTURE(e.robot);
    REQUIRE(store.build(e.robot, "sm_90").exit_code == 0);
    kiln::Runtime runtime(store.options("sm_90"));
    kiln::Module module = runtime.ensure(kiln::Recipe::load(recipe_file(e.robot)));
    const kiln::LoadReport &report = module.report();
    CHECK(report.plugin_id == e.plugin_id);
    CHECK(report.abi_version == KILN_ABI_VERSION);
    CHECK(report.interfaces == std::vector<std::string>{KILN_IK_INTERFACE_ID, KILN_SELFTEST_INTERFACE_ID,
                                                        KILN_ROBOTMODEL_INTERFACE_ID});
    CHECK(report.resolution.input_key == store.build(e.robot, "sm_90").out["input_key"]);

    kiln::Instance instance = module.create_instance();
    const kiln_ik_v1 *ik = ik_of(instance);
    REQUIRE(ik != nullptr);
    CHECK(ik->dof(instance.handle()) == 7);
    kiln_ik_info info{};
    info.struct_size = sizeof info;
    REQUIRE(ik->info(instance.handle(), &info) == KILN_OK);
    CHECK(std::string(info.robot) == e.robot_name);
    CHECK(std::string(info.base_link) == e.base);
    CHECK(std::string(info.tip_link) == e.tip);
    CHECK(std::string(info.source) == e.source);
    const std::vector<float> zero(7, 0.0f);
    float pose[KILN_IK_POSE_SIZE];
    REQUIRE(ik->fk(instance.handle(), zero.data(), 1, pose) == KILN_OK);
    for (int k = 0; k < 3; ++k) CHECK(std::fabs(pose[k] - e.tip_at_zero[k]) < 1e-6);
    instance.activate(-1, 64);  // host only: the plugin's CPU path
    CHECK(solve_and_judge(*ik, instance, 64, 5) == 64);
  }
}

TEST_CASE("ik recipes: the variants built on miss load; iiwa14-b passes its self-test, iiwa14-broken fails it") {
  RecipeStore &store = shared_store();
  for (const std::string name : {"iiwa14-b", "iiwa14-broken"}) {
    CAPTURE(name);
    REQUIRE_MESSAGE(store.build(name, "sm_90").exit_code == 0, store.build(name, "sm_90").err);
    kiln::Runtime runtime(store.options("sm_90"));
    kiln::Module module = runtime.ensure(kiln::Recipe::load(recipe_file(name)));
    CHECK(module.report().plugin_id == "org.kiln.ik.iiwa14");
    CHECK(module.report().plugin_version.find("+" + name.substr(7)) != std::string::npos);
    kiln::Instance instance = module.create_instance();
    instance.activate(-1, 16);
    const auto *selftest = instance.interface<kiln_selftest_v1>(KILN_SELFTEST_INTERFACE_ID);
    REQUIRE(selftest != nullptr);
    char message[512] = "";
    const kiln_status status = selftest->run(instance.handle(), message, sizeof message);
    MESSAGE(name << ": " << message);
    CHECK((status == KILN_OK) == (name == "iiwa14-b"));
  }
}

TEST_SUITE("gpu") {
  TEST_CASE("ik recipes: GPU: ensure (native) builds for the live device, loads and solves 1024 targets (>= 99 %)") {
    TempDir dir;
    kiln::RuntimeOptions options;
    options.cache_dir = (dir / "cache").string();
    kiln::Runtime runtime(options);  // the live device; no declared one
    REQUIRE(runtime.devices().state == kiln::DriverState::ok);
    const kiln::Recipe recipe = kiln::Recipe::load(recipe_file("iiwa14"));
    const kiln::BuildResult built = runtime.build(recipe);
    CHECK(built.outcome == kiln::BuildResult::Outcome::built);
    REQUIRE(built.archs.size() == 1);
    CHECK(built.archs[0].to_string() == runtime.devices().devices.front().arch_name());
    MESSAGE("iiwa14 built for " << built.archs[0].to_string() << " in " << built.seconds << " s");

    kiln::Module module = runtime.ensure(recipe);
    const kiln::LoadReport &report = module.report();
    CHECK(report.resolution.content_key == built.content_key);
    REQUIRE(report.device);
    CHECK_FALSE(report.device->declared);
    CHECK(report.compatibility.ok);
    kiln::Instance instance = module.create_instance();
    const kiln_ik_v1 *ik = ik_of(instance);
    REQUIRE(ik != nullptr);
    const uint32_t count = 1024;
    instance.activate(0, count);
    const std::size_t good = solve_and_judge(*ik, instance, count, 2024);
    MESSAGE("iiwa14 on " << report.device->name << ": " << good << " / " << count << " within 1 mm / 0.01 rad");
    CHECK(static_cast<double>(good) >= 0.99 * count);
    CHECK(runtime.build(recipe).outcome == kiln::BuildResult::Outcome::hit);
  }
}
