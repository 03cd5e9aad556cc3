// kiln robot init from this build tree: the recipes it writes for a new robot (the six-joint arm
// of tests/fixtures/arm6.urdf) plan with kiln build --plan, and every chain a plugin cannot take
// is refused before anything is written, naming the joint or link and the fix. The same refusals
// in a build's generator step: kiln-urdf-fk --max-joints, and the xacro check.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include "kiln_joint_limits.hpp"  // plugins/common
#include "support/checks.hpp"
#include "support/file_counts.hpp"
#include "support/fixtures.hpp"

using kiln::test::CommandResult;
using kiln::test::TempDir;
using kiln::test::contains;
using kiln::test::files_under;
namespace fs = boost::filesystem;

namespace {

const fs::path kArm = fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "fixtures" / "arm6.urdf";

std::map<std::string, std::string> plan_env(const TempDir &dir) {
  return {{"KILN_CACHE_DIR", (dir / "cache").string()}, {"KILN_DEVICE", "sm_87,integrated=1"}, {"KILN_STORE_PATH", ""}};
}

CommandResult init(const std::vector<std::string> &args) {
  std::vector<std::string> all = {"robot", "init"};
  all.insert(all.end(), args.begin(), args.end());
  return kiln::test::run_kiln(all);
}

std::size_t files_in(const fs::path &dir) {
  if (!fs::exists(dir)) return 0;
  std::size_t count = 0;
  for (fs::directory_iterator it(dir), end; it != end; ++it) ++count;
  return count;
}

// A serial chain of `joints` revolute joints j1..jN, links l0..lN, each with an inertial.
std::string long_chain(int joints) {
  std::string text = "<robot name=\"long\"><link name=\"l0\"/>";
  for (int i = 1; i <= joints; ++i) {
    const std::string n = std::to_string(i), p = std::to_string(i - 1);
    text += "<link name=\"l" + n +
            "\"><inertial><mass value=\"1\"/><inertia ixx=\"0.01\" ixy=\"0\" ixz=\"0\" iyy=\"0.01\" iyz=\"0\" "
            "izz=\"0.01\"/></inertial></link><joint name=\"j" + n + "\" type=\"revolute\"><parent link=\"l" + p +
            "\"/><child link=\"l" + n + "\"/><origin xyz=\"0 0 0.1\"/><axis xyz=\"0 0 1\"/><limit lower=\"-1\" "
            "upper=\"1\" velocity=\"1\" effort=\"10\"/></joint>";
  }
  return text + "</robot>";
}

// Two links a -> b joined by a joint of `type`, plus `extra` inside <joint>.
std::string two_links(const std::string &type, const std::string &extra = "") {
  return "<robot name=\"two\"><link name=\"a\"/><link name=\"b\"/><link name=\"c\"/>"
         "<joint name=\"j0\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><axis xyz=\"0 0 1\"/>"
         "<limit lower=\"-1\" upper=\"1\" velocity=\"1\" effort=\"1\"/></joint>"
         "<joint name=\"odd\" type=\"" + type + "\"><parent link=\"b\"/><child link=\"c\"/><axis xyz=\"0 0 1\"/>"
         "<limit lower=\"-1\" upper=\"1\" velocity=\"1\" effort=\"1\"/>" + extra + "</joint></robot>";
}

}  // namespace

TEST_CASE("kiln robot init: a new arm's IK and TrajOpt recipes, written and planned") {
  TempDir dir;
  const fs::path out = dir / "recipes";
  const CommandResult run = init({kArm.string(), "--base", "base_link", "--tip", "tool0", "--ik", "--trajopt", "32,64",
                                  "-o", out.string(), "--json"});
  REQUIRE_MESSAGE(run.exit_code == 0, run.err);
  const nlohmann::json report = nlohmann::json::parse(run.out);
  CHECK(report["robot"] == "arm6");
  CHECK(report["joints"] == 6);
  REQUIRE(report["recipes"].size() == 3);
  const fs::path ik = out / "ik-arm6.json", n32 = out / "trajopt-arm6-N32.json", n64 = out / "trajopt-arm6-N64.json";
  REQUIRE(fs::exists(ik));
  REQUIRE(fs::exists(n32));
  REQUIRE(fs::exists(n64));
  CHECK(files_in(out) == 3);  // no temporary left beside them

  const nlohmann::json ik_recipe = nlohmann::json::parse(kiln::test::read_text(ik));
  CHECK(ik_recipe["consumer"] == "kiln-ik");
  CHECK(ik_recipe["name"] == "arm6");
  CHECK(ik_recipe["defines"][0] == "KILN_IK_PLUGIN_ID=\"org.kiln.ik.arm6\"");
  CHECK(ik_recipe["artifact"] == "libkiln_ik_arm6.so");
  CHECK(ik_recipe["generators"][0]["inputs"][0] == kArm.string());
  CHECK(ik_recipe["generators"][0]["tool"] == KILN_URDF_FK_PATH);
  CHECK(contains(ik_recipe["sources"][0].get<std::string>(), "/plugins/ik/solver/ik_plugin.cu"));
  const nlohmann::json trajopt = nlohmann::json::parse(kiln::test::read_text(n32));
  CHECK(trajopt["name"] == "arm6-N32");
  CHECK(trajopt["cmake_options"]["KILN_TRAJOPT_N"] == "32");
  CHECK(trajopt["cmake_options"]["KILN_TRAJOPT_PLUGIN_ID"] == "org.kiln.trajopt.arm6.n32");

  for (const fs::path &recipe : {ik, n32, n64}) {
    const CommandResult plan = kiln::test::run_kiln({"build", "--plan", recipe.string()}, plan_env(dir));
    CHECK_MESSAGE(plan.exit_code == 0, recipe.string() << ": " << plan.err);
    CHECK_MESSAGE(contains(plan.out, "missing"), plan.out);
  }

  SUBCASE("an existing file is kept without --force, replaced with it") {
    kiln::test::write_text(ik, "mine\n");
    const CommandResult again = init({kArm.string(), "--base", "base_link", "--tip", "tool0", "-o", out.string()});
    CHECK(again.exit_code == 2);
    CHECK(contains(again.err, ik.string() + " exists: pass --force"));
    CHECK(kiln::test::read_text(ik) == "mine\n");
    const CommandResult forced =
        init({kArm.string(), "--base", "base_link", "--tip", "tool0", "-o", out.string(), "--force"});
    REQUIRE_MESSAGE(forced.exit_code == 0, forced.err);
    CHECK(kiln::test::read_text(ik) != "mine\n");
  }
  SUBCASE("--name names the recipes, the plugin ids and the files") {
    const CommandResult named =
        init({kArm.string(), "--base", "base_link", "--tip", "tool0", "--name", "cell-3.arm", "-o", out.string()});
    REQUIRE_MESSAGE(named.exit_code == 0, named.err);
    const nlohmann::json recipe = nlohmann::json::parse(kiln::test::read_text(out / "ik-cell-3.arm.json"));
    CHECK(recipe["name"] == "cell-3.arm");
    CHECK(recipe["defines"][0] == "KILN_IK_PLUGIN_ID=\"org.kiln.ik.cell-3.arm\"");
  }
}

TEST_CASE("kiln robot init: what a plugin cannot take is refused before anything is written") {
  TempDir dir;
  const fs::path out = dir / "out";
  const auto refused = [&](const fs::path &urdf, std::vector<std::string> args) {
    std::vector<std::string> all = {urdf.string()};
    all.insert(all.end(), args.begin(), args.end());
    all.insert(all.end(), {"-o", out.string()});
    const CommandResult run = init(all);
    CHECK_MESSAGE(run.exit_code == 2, run.err);
    CHECK_MESSAGE(files_in(out) == 0, "files were written for a refused chain");
    return run.err;
  };

  // The limits are the solvers' own (their static_asserts read the same header): a chain at the
  // limit is written, one joint more refused.
  SUBCASE("more joints than TrajOpt takes, and than IK takes") {
    const int trajopt_max = kiln_plugins::kTrajoptMaxJoints, ik_max = kiln_plugins::kIkMaxJoints;
    const std::string at = std::to_string(trajopt_max), past = std::to_string(trajopt_max + 1);
    kiln::test::write_text(dir / "fits.urdf", long_chain(trajopt_max));
    const CommandResult fits = init({(dir / "fits.urdf").string(), "--base", "l0", "--tip", "l" + at, "--trajopt",
                                     "32", "-o", (dir / "fits").string()});
    CHECK_MESSAGE(fits.exit_code == 0, fits.err);
    kiln::test::write_text(dir / "long.urdf", long_chain(trajopt_max + 1));
    const std::string trajopt = refused(dir / "long.urdf", {"--base", "l0", "--tip", "l" + past, "--trajopt", "32"});
    CHECK(contains(trajopt, "TrajOpt plugin cannot take this chain"));
    CHECK(contains(trajopt, past + " movable joints; this plugin supports at most " + at + " (joint 'j" + past +
                                "' is number " + past + ")"));
    CHECK(contains(trajopt, "choose a --tip at or above link 'l" + at + "'"));
    kiln::test::write_text(dir / "ik-fits.urdf", long_chain(ik_max));
    const CommandResult ik = init({(dir / "ik-fits.urdf").string(), "--base", "l0", "--tip",
                                   "l" + std::to_string(ik_max), "-o", (dir / "ik").string()});
    CHECK_MESSAGE(ik.exit_code == 0, ik.err);
    const std::string ik_past = std::to_string(ik_max + 1);
    kiln::test::write_text(dir / "longer.urdf", long_chain(ik_max + 1));
    const std::string too_long = refused(dir / "longer.urdf", {"--base", "l0", "--tip", "l" + ik_past, "--ik"});
    CHECK(contains(too_long, "IK plugin cannot take this chain"));
    CHECK(contains(too_long, "at most " + std::to_string(ik_max) + " (joint 'j" + ik_past + "' is number " +
                                 ik_past + ")"));
  }
  SUBCASE("a mimic joint in the chain") {
    kiln::test::write_text(dir / "m.urdf", two_links("revolute", "<mimic joint=\"j0\" multiplier=\"1\"/>"));
    const std::string err = refused(dir / "m.urdf", {"--base", "a", "--tip", "c"});
    CHECK(contains(err, "joint 'odd' (b -> c) in m.urdf is a mimic joint (it mimics 'j0')"));
    CHECK(contains(err, "choose a --tip above 'c'"));
  }
  SUBCASE("planar and floating joints") {
    for (const std::string type : {"planar", "floating"}) {
      kiln::test::write_text(dir / "p.urdf", two_links(type));
      const std::string err = refused(dir / "p.urdf", {"--base", "a", "--tip", "c"});
      CHECK(contains(err, "joint 'odd' (b -> c) in p.urdf is of type " + type));
      CHECK(contains(err, "supports revolute, continuous, prismatic and fixed joints"));
    }
  }
  SUBCASE("a xacro file given as the URDF") {
    kiln::test::write_text(dir / "arm.urdf.xacro",
                           "<robot name=\"arm\" xmlns:xacro=\"http://www.ros.org/wiki/xacro\"><link name=\"world\"/>"
                           "<xacro:include filename=\"arm_macro.xacro\"/><xacro:arm parent=\"world\"/></robot>");
    const std::string err = refused(dir / "arm.urdf.xacro", {"--base", "base_link", "--tip", "tool0"});
    CHECK(contains(err, "is a xacro file (it uses xacro macros), not a URDF"));
    CHECK(contains(err, "`xacro " + (dir / "arm.urdf.xacro").string() + " > " + (dir / "arm.urdf").string() + "`"));
  }
  SUBCASE("a malformed URDF: the parser's reason comes along") {
    kiln::test::write_text(dir / "bad.urdf", "<robot name=\"bad\"><link name=\"a\"/><joint name=\"j\" type=\"revolute\">"
                                             "<parent link=\"a\"/><child link=\"b\"/></joint></robot>");
    const std::string err = refused(dir / "bad.urdf", {"--base", "a", "--tip", "b"});
    CHECK(contains(err, "bad.urdf' is not a valid URDF"));
    CHECK(contains(err, "the URDF parser said: "));
    CHECK(contains(err, "does not specify limits"));
  }
  SUBCASE("a chain given tip-first") {
    const std::string err = refused(kArm, {"--base", "tool0", "--tip", "base_link"});
    CHECK(contains(err, "the chain is given tip-first: link 'base_link' is an ancestor of link 'tool0'"));
    CHECK(contains(err, "swap them (--base base_link --tip tool0)"));
  }
  SUBCASE("an unknown link lists the URDF's links") {
    const std::string err = refused(kArm, {"--base", "base_link", "--tip", "flange"});
    CHECK(contains(err, "unknown link 'flange' in arm6.urdf"));
    CHECK(contains(err, "tool0"));
  }
  SUBCASE("hostile and unusable names") {
    for (const std::string &name : std::vector<std::string>{"../evil", "a b", ".hidden", std::string(70, 'x')}) {
      const std::string err = refused(kArm, {"--base", "base_link", "--tip", "tool0", "--name", name});
      CHECK_MESSAGE(contains(err, "the name from --name is refused"), err);
    }
    CHECK(!fs::exists(dir / "evil"));
    kiln::test::write_text(dir / "spaced.urdf", "<robot name=\"my robot\">" + long_chain(2).substr(19));
    const std::string err = refused(dir / "spaced.urdf", {"--base", "l0", "--tip", "l2"});
    CHECK(contains(err, "the URDF's robot name (pass --name NAME) is refused"));
  }
  SUBCASE("bad horizons and a missing URDF") {
    CHECK(contains(refused(kArm, {"--base", "base_link", "--tip", "tool0", "--trajopt", "32,x"}), "'x' is not a horizon"));
    CHECK(contains(refused(kArm, {"--base", "base_link", "--tip", "tool0", "--trajopt", "1"}), "2..1024"));
    const CommandResult missing = init({(dir / "none.urdf").string(), "--base", "a", "--tip", "b"});
    CHECK(missing.exit_code == 3);
    CHECK(contains(missing.err, "none.urdf' is not a readable file"));
  }
}

// The model fingerprint (kiln.robotmodel/1 1.1, kModelFingerprint in both headers): the URDF as
// parsed and the chain, and with dynamics their gravity; not comments, element order or visuals,
// nor, for a kinematic model (FK alone), a gravity it never applies.
TEST_CASE("kiln-urdf-fk: the model fingerprint follows the model, not the file's form") {
  TempDir dir;
  const std::string tool = kiln::test::shell_quote(KILN_URDF_FK_PATH);
  const auto fingerprint = [&](const std::string &name, const std::string &text, const std::string &args) {
    kiln::test::write_text(dir / name, text);
    const CommandResult run = kiln::test::run_shell(tool + " " + kiln::test::shell_quote((dir / name).string()) +
                                                    " --check " + args);
    REQUIRE_MESSAGE(run.exit_code == 0, run.err);
    const std::size_t at = run.out.find("fingerprint ");
    REQUIRE(at != std::string::npos);
    return run.out.substr(at + 12, run.out.find('\n', at) - at - 12);
  };
  const auto replaced = [](std::string text, const std::string &from, const std::string &to) {
    const std::size_t at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
  };
  const std::string base = long_chain(2), chain = "--base l0 --tip l2";
  const std::string print = fingerprint("a.urdf", base, chain);
  CHECK(print.rfind("xxh128:", 0) == 0);
  CHECK(print.size() == 7 + 32);
  // The same model written otherwise: a comment and blanks, the base link moved to the end, a visual.
  CHECK(fingerprint("b.urdf", replaced(base, "<link name=\"l0\"/>", "<!-- the base -->\n   <link   name=\"l0\" />"), chain) == print);
  CHECK(fingerprint("c.urdf", replaced(replaced(base, "<link name=\"l0\"/>", ""), "</robot>", "<link name=\"l0\"/></robot>"),
                    chain) == print);
  CHECK(fingerprint("d.urdf", replaced(base, "<link name=\"l1\">", "<link name=\"l1\"><visual><geometry><box size=\"1 1 1\"/></geometry></visual>"),
                    chain) == print);
  // Another model: a mass, a joint's origin, the chain's tip.
  CHECK(fingerprint("e.urdf", replaced(base, "<mass value=\"1\"/>", "<mass value=\"1.5\"/>"), chain) != print);
  CHECK(fingerprint("f.urdf", replaced(base, "xyz=\"0 0 0.1\"", "xyz=\"0 0 0.2\""), chain) != print);
  CHECK(fingerprint("g.urdf", base, "--base l0 --tip l1") != print);
  CHECK(fingerprint("h.urdf", base, chain + " --gravity 0 0 -1.62") == print);
  // With dynamics (--dynamics-check: as a build with --dynamics records it), the gravity is part of
  // the model: another model than the kinematic one, and another under another gravity.
  const std::string dynamic = fingerprint("i.urdf", base, chain + " --dynamics-check");
  CHECK(dynamic != print);
  CHECK(fingerprint("j.urdf", base, chain + " --dynamics-check --gravity 0 0 -9.81") == dynamic);
  CHECK(fingerprint("k.urdf", base, chain + " --dynamics-check --gravity 0 0 -1.62") != dynamic);
  CHECK(fingerprint("l.urdf", base, chain + " --dynamics-check --gravity 0 -9.81 0") != dynamic);
  // --model-text: what is digested, a line per link and joint (a diff names what differs).
  const CommandResult text = kiln::test::run_shell(tool + " " + kiln::test::shell_quote((dir / "a.urdf").string()) +
                                                   " " + chain + " --check --model-text");
  REQUIRE(text.exit_code == 0);
  CHECK(contains(text.out, "chain l0 -> l2\n"));
  CHECK(contains(text.out, "\nlink l1 inertial xyz 0 0 0 rpy 0 0 0 mass 1 inertia 0.01 0 0 0.01 0 0.01\n"));
  CHECK(contains(text.out, "\njoint j2 revolute l1 -> l2 xyz 0 0 0.10000000000000001 rpy 0 0 0 axis 0 0 1 limit -1 1 effort 10 velocity 1\n"));
  CHECK(!contains(text.out, "\ngravity "));
  const CommandResult dynamic_text = kiln::test::run_shell(
      tool + " " + kiln::test::shell_quote((dir / "a.urdf").string()) + " " + chain +
      " --check --dynamics-check --gravity 0 0 -1.62 --model-text");
  REQUIRE(dynamic_text.exit_code == 0);
  CHECK(contains(dynamic_text.out, "chain l0 -> l2\ngravity 0 0 -1.6200000000000001\n"));
  // The headers carry it: the FK header alone the kinematic model; both headers written together
  // the model with dynamics.
  const CommandResult header = kiln::test::run_shell(tool + " " + kiln::test::shell_quote((dir / "a.urdf").string()) +
                                                     " " + chain + " -o " + kiln::test::shell_quote((dir / "fk.cuh").string()));
  REQUIRE(header.exit_code == 0);
  CHECK(contains(kiln::test::read_text(dir / "fk.cuh"), "kModelFingerprint = \"" + print + "\";"));
  const CommandResult both = kiln::test::run_shell(
      tool + " " + kiln::test::shell_quote((dir / "a.urdf").string()) + " " + chain + " -o " +
      kiln::test::shell_quote((dir / "fk2.cuh").string()) + " --dynamics " +
      kiln::test::shell_quote((dir / "rnea.cuh").string()));
  REQUIRE_MESSAGE(both.exit_code == 0, both.err);
  CHECK(contains(kiln::test::read_text(dir / "fk2.cuh"), "kModelFingerprint = \"" + dynamic + "\";"));
  CHECK(contains(kiln::test::read_text(dir / "rnea.cuh"), "kModelFingerprint = \"" + dynamic + "\";"));
  CHECK(contains(kiln::test::read_text(dir / "rnea.cuh"), "\"gravity 0 0 -9.8100000000000005\\012\""));
}

TEST_CASE("kiln-urdf-fk: --max-joints and xacro files refused in a build's generator step, nothing written") {
  TempDir dir;
  kiln::test::write_text(dir / "long.urdf", long_chain(17));
  const std::string tool = kiln::test::shell_quote(KILN_URDF_FK_PATH);
  const CommandResult run = kiln::test::run_shell(tool + " " + kiln::test::shell_quote((dir / "long.urdf").string()) +
                                                  " --base l0 --tip l17 --max-joints 16 -o " +
                                                  kiln::test::shell_quote((dir / "fk.cuh").string()));
  CHECK(run.exit_code == 1);
  CHECK(contains(run.err, "has 17 movable joints; this plugin supports at most 16"));
  CHECK(!fs::exists(dir / "fk.cuh"));
  const CommandResult fits = kiln::test::run_shell(tool + " " + kiln::test::shell_quote((dir / "long.urdf").string()) +
                                                   " --base l0 --tip l16 --max-joints 16 --check");
  CHECK_MESSAGE(fits.exit_code == 0, fits.err);
  CHECK(contains(fits.out, "robot long\njoints 16\njoint j1 revolute\n"));
  // xacro's ${...} left in commented-out elements (xacro keeps comments as they are): a URDF still.
  kiln::test::write_text(dir / "commented.urdf",
                         "<robot name=\"long\" xmlns:xacro=\"http://www.ros.org/wiki/xacro\">"
                         "<!-- <safety_controller soft_lower_limit=\"${-118 * PI / 180}\"/> -->" +
                             long_chain(2).substr(19));
  const CommandResult commented = kiln::test::run_shell(
      tool + " " + kiln::test::shell_quote((dir / "commented.urdf").string()) + " --base l0 --tip l2 --check");
  CHECK_MESSAGE(commented.exit_code == 0, commented.err);
  CHECK(contains(commented.out, "robot long\njoints 2\n"));
  // The same expression outside a comment is still left to expand.
  kiln::test::write_text(dir / "expr.urdf", "<robot name=\"long\" xmlns:xacro=\"http://www.ros.org/wiki/xacro\">"
                                            "<!-- a comment --><link name=\"x${n}\"/>" +
                                                long_chain(2).substr(19));
  const CommandResult expr = kiln::test::run_shell(
      tool + " " + kiln::test::shell_quote((dir / "expr.urdf").string()) + " --base l0 --tip l2 --check");
  CHECK(expr.exit_code == 1);
  CHECK(contains(expr.err, "is a xacro file"));
}

// The recipes robot init writes carry kiln-urdf-fk --check as their generator's check, so a
// recipe edited by hand afterwards is refused by `kiln build --plan` (and a build) before any
// compiler runs, with the generator's own message.
TEST_CASE("kiln build --plan: a robot init recipe edited past what its plugin takes is refused at plan time") {
  TempDir dir;
  const int ik_max = kiln_plugins::kIkMaxJoints;
  const std::string at = std::to_string(ik_max), past = std::to_string(ik_max + 1);
  kiln::test::write_text(dir / "long.urdf", long_chain(ik_max + 1));
  const fs::path out = dir / "recipes";
  const CommandResult made = init({(dir / "long.urdf").string(), "--base", "l0", "--tip", "l" + at, "--ik", "-o", out.string()});
  REQUIRE_MESSAGE(made.exit_code == 0, made.err);
  const fs::path ik = out / "ik-long.json";
  nlohmann::json recipe = nlohmann::json::parse(kiln::test::read_text(ik));
  REQUIRE(recipe["generators"][0].contains("check"));
  const CommandResult fits = kiln::test::run_kiln({"build", "--plan", ik.string()}, plan_env(dir));
  CHECK_MESSAGE(fits.exit_code == 0, fits.err);

  const auto refused_at_plan = [&](const nlohmann::json &edited, const std::string &why) {
    kiln::test::write_text(ik, edited.dump(2));
    for (const auto &args : {std::vector<std::string>{"build", "--plan", ik.string()},
                             std::vector<std::string>{"build", ik.string()}}) {
      const CommandResult run = kiln::test::run_kiln(args, plan_env(dir));
      CHECK_MESSAGE(run.exit_code == 2, run.err);
      CHECK_MESSAGE(contains(run.err, ik.string() + " (kiln-ik/long): generator fk-chain refuses it"), run.err);
      CHECK_MESSAGE(contains(run.err, why), run.err);
      CHECK_MESSAGE(files_under(dir / "cache" / "consumers") == 0, "a refused recipe wrote into the store");
    }
  };
  // Every "l<at>" the recipe names (command and check alike) moved one link down the chain.
  const auto with_tip = [&](const std::string &tip) {
    nlohmann::json edited = recipe;
    for (auto *list : {&edited["generators"][0]["command"], &edited["generators"][0]["check"]}) {
      for (auto &word : *list) {
        if (word == "l" + at) word = tip;
      }
    }
    return edited;
  };
  SUBCASE("--tip moved past the joint limit") {
    refused_at_plan(with_tip("l" + past), past + " movable joints; this plugin supports at most " + at);
  }
  SUBCASE("a URDF with a mimic joint") {
    kiln::test::write_text(dir / "long.urdf", two_links("revolute", "<mimic joint=\"j0\" multiplier=\"1\"/>"));
    nlohmann::json edited = recipe;
    for (auto *list : {&edited["generators"][0]["command"], &edited["generators"][0]["check"]}) {
      for (auto &word : *list) {
        if (word == "l0") word = "a";
        if (word == "l" + at) word = "c";
      }
    }
    refused_at_plan(edited, "joint 'odd' (b -> c) in long.urdf is a mimic joint (it mimics 'j0')");
  }
}
