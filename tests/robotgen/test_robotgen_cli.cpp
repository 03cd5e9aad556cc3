// kiln-urdf-fk --dynamics as a program: deterministic bytes independent of paths and of the
// working directory, the FK header's code unaffected by the option (its model gains the
// gravity), and every refusal naming its culprit and leaving nothing behind. (What the generated
// code computes: test_rnea_*.cpp.)
#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include "support/fixtures.hpp"
#include "support/checks.hpp"

using kiln::test::CommandResult;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

std::string quote(const std::string &text) {
  std::string out = "'";
  for (const char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The tool run in `cwd` with the arguments as given (relative paths resolve there).
CommandResult tool(const fs::path &cwd, const std::string &args) {
  return kiln::test::run_shell("cd " + quote(cwd.string()) + " && " + quote(KILN_URDF_FK_PATH) + " " + args);
}

using kiln::test::contains;

const fs::path kRobots = KILN_ROBOTGEN_ROBOTS_DIR;
const std::string kIiwa = " --base lbr_iiwa_link_0 --tip lbr_iiwa_link_7";

}  // namespace

TEST_CASE("kiln-urdf-fk --dynamics: the same URDF gives the same bytes from any directory and path") {
  TempDir one, two;
  fs::create_directories(two / "deeper" / "still");
  fs::copy_file(kRobots / "iiwa14.urdf", one / "iiwa14.urdf");
  fs::copy_file(kRobots / "iiwa14.urdf", two / "deeper" / "still" / "iiwa14.urdf");
  // One run by relative path from its own directory, one by absolute path from elsewhere, a third repeating it.
  const CommandResult a = tool(one.path(), "iiwa14.urdf" + kIiwa + " --dynamics a.cuh");
  const CommandResult b = tool(one.path(), quote((two / "deeper" / "still" / "iiwa14.urdf").string()) + kIiwa +
                                               " --dynamics " + quote((two / "b.cuh").string()));
  const CommandResult c = tool(two.path(), "deeper/still/iiwa14.urdf" + kIiwa + " --dynamics c.cuh");
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  const std::string text = kiln::test::read_text(one / "a.cuh");
  CHECK(text == kiln::test::read_text(two / "b.cuh"));
  CHECK(text == kiln::test::read_text(two / "c.cuh"));
  CHECK(text == kiln::test::read_text(KILN_ROBOTGEN_HEADER_IIWA14));  // the build's, from the source tree
  CHECK(contains(text, "from iiwa14.urdf"));
  CHECK(contains(text, "namespace kiln_rnea {"));
  CHECK_FALSE(contains(text, one.path().string()));
  CHECK_FALSE(contains(text, two.path().string()));
  CHECK_FALSE(contains(text, KILN_TEST_SOURCE_DIR));
  CHECK_FALSE(contains(text, KILN_TEST_BINARY_DIR));

  SUBCASE("with -o as well: the FK header's code is the one -o alone writes; its model has the dynamics' gravity") {
    REQUIRE(tool(one.path(), "iiwa14.urdf" + kIiwa + " -o fk_alone.cuh").exit_code == 0);
    REQUIRE(tool(one.path(), "iiwa14.urdf" + kIiwa + " -o fk.cuh --dynamics d.cuh --gravity 0 0 -1.62").exit_code == 0);
    // Line by line, only the model (its fingerprint, its text's gravity line) and the namespace
    // tag hashed from the contents differ.
    std::istringstream alone(kiln::test::read_text(one / "fk_alone.cuh")), together(kiln::test::read_text(one / "fk.cuh"));
    std::vector<std::string> only_together;
    for (std::string line_alone, line_together; std::getline(together, line_together);) {
      if (contains(line_together, "\"gravity 0 0 -1.6200000000000001\\012\"")) continue;  // the one line -o alone lacks
      REQUIRE(std::getline(alone, line_alone));
      if (line_alone != line_together) only_together.push_back(line_together);
    }
    REQUIRE(only_together.size() == 4);
    CHECK(contains(only_together[0], "#define KILN_FK_CHAIN_TAG chain_"));
    CHECK(contains(only_together[1], "inline namespace chain_"));
    CHECK(contains(only_together[2], "kModelFingerprint = \"xxh128:"));
    CHECK(contains(only_together[3], "}  // namespace chain_"));
    const std::string moon = kiln::test::read_text(one / "d.cuh");
    CHECK(contains(moon, "kGravity[3] = {0.0, 0.0, -1.62};"));
    CHECK(contains(text, "kGravity[3] = {0.0, 0.0, -9.81};"));
  }
  SUBCASE("another namespace") {
    REQUIRE(tool(one.path(), "iiwa14.urdf" + kIiwa + " --dynamics n.cuh --dynamics-namespace robots::iiwa").exit_code == 0);
    CHECK(contains(kiln::test::read_text(one / "n.cuh"), "namespace robots::iiwa {"));
  }
}

TEST_CASE("kiln-urdf-fk --dynamics: refusals name the culprit and write nothing") {
  TempDir dir;
  const auto chain_urdf = [&](const std::string &inertial) {
    kiln::test::write_text(dir / "r.urdf",
                           "<robot name=\"r\"><link name=\"a\"/><link name=\"b\">" + inertial +
                               "</link><joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/>"
                               "<axis xyz=\"0 0 1\"/><limit lower=\"-1\" upper=\"1\" effort=\"1\" velocity=\"1\"/>"
                               "</joint></robot>");
  };
  const auto run = [&] { return tool(dir.path(), "r.urdf --base a --tip b -o fk.cuh --dynamics d.cuh"); };
  SUBCASE("a negative mass") {
    chain_urdf("<inertial><mass value=\"-1\"/><inertia ixx=\"1\" ixy=\"0\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial>");
    const CommandResult result = run();
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "link 'b' in r.urdf"));
    CHECK(contains(result.err, "mass -1"));
  }
  SUBCASE("an inertia tensor that is not a body's") {
    chain_urdf("<inertial><mass value=\"1\"/><inertia ixx=\"1\" ixy=\"5\" ixz=\"0\" iyy=\"1\" iyz=\"0\" izz=\"1\"/></inertial>");
    const CommandResult result = run();
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "link 'b' in r.urdf"));
    CHECK(contains(result.err, "negative principal moment"));
  }
  SUBCASE("no output asked for") {
    chain_urdf("");
    const CommandResult result = tool(dir.path(), "r.urdf --base a --tip b");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "nothing to write"));
  }
  SUBCASE("a bad namespace") {
    chain_urdf("");
    const CommandResult result = tool(dir.path(), "r.urdf --base a --tip b --dynamics d.cuh --dynamics-namespace 9x");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "--dynamics-namespace '9x'"));
  }
  CHECK_FALSE(fs::exists(dir / "fk.cuh"));
  CHECK_FALSE(fs::exists(dir / "d.cuh"));

  SUBCASE("a link without an inertial is a massless body, said so in the header") {
    chain_urdf("");
    REQUIRE(run().exit_code == 0);
    CHECK(contains(kiln::test::read_text(dir / "d.cuh"), "(no <inertial>: b)"));
  }
}
