// kiln-urdf-fk as a program: deterministic output without paths, and every refusal naming its
// culprit. (What the generated code computes is checked in the per-chain test files.)
#include <doctest/doctest.h>

#include <string>

#include <boost/filesystem/operations.hpp>

#include "support/fixtures.hpp"
#include "support/checks.hpp"

using kiln::test::CommandResult;
using kiln::test::TempDir;
namespace fs = boost::filesystem;

namespace {

std::string quote(const std::string &text) {
  std::string out = "'";
  for (const char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

CommandResult generate(const fs::path &urdf, const std::string &base, const std::string &tip, const fs::path &out,
                       const std::string &extra = "") {
  return kiln::test::run_shell(quote(KILN_URDF_FK_PATH) + " " + quote(urdf.string()) + " --base " + quote(base) +
                               " --tip " + quote(tip) + " -o " + quote(out.string()) + extra);
}

using kiln::test::contains;

const fs::path kRobots = KILN_IK_ROBOTS_DIR;

}  // namespace

TEST_CASE("kiln-urdf-fk: the same URDF gives the same bytes wherever it lies, with no path or time in them") {
  TempDir one, two;
  fs::create_directories(two / "deeper" / "still");
  const fs::path copy_one = one / "iiwa14.urdf";
  const fs::path copy_two = two / "deeper" / "still" / "iiwa14.urdf";
  fs::copy_file(kRobots / "iiwa14.urdf", copy_one);
  fs::copy_file(kRobots / "iiwa14.urdf", copy_two);

  const CommandResult a = generate(copy_one, "lbr_iiwa_link_0", "lbr_iiwa_link_7", one / "a.cuh");
  const CommandResult b = generate(copy_two, "lbr_iiwa_link_0", "lbr_iiwa_link_7", two / "b.cuh");
  REQUIRE_MESSAGE(a.exit_code == 0, a.err);
  REQUIRE_MESSAGE(b.exit_code == 0, b.err);
  const std::string text = kiln::test::read_text(one / "a.cuh");
  CHECK(text == kiln::test::read_text(two / "b.cuh"));
  // The header the build generated (from the source tree's copy) is byte-identical too.
  CHECK(text == kiln::test::read_text(KILN_IK_HEADER_IIWA14));
  CHECK(contains(text, "from iiwa14.urdf"));
  CHECK_FALSE(contains(text, one.path().string()));
  CHECK_FALSE(contains(text, two.path().string()));
  CHECK_FALSE(contains(text, KILN_TEST_SOURCE_DIR));
  CHECK_FALSE(contains(text, KILN_TEST_BINARY_DIR));
  // Nothing but the file itself is left behind (the temporary was renamed into place).
  int files = 0;
  for (fs::directory_iterator it(one.path()), end; it != end; ++it) ++files;
  CHECK(files == 2);

  SUBCASE("another namespace changes only what it must") {
    REQUIRE(generate(copy_one, "lbr_iiwa_link_0", "lbr_iiwa_link_7", one / "c.cuh", " --namespace robots::iiwa")
                .exit_code == 0);
    const std::string other = kiln::test::read_text(one / "c.cuh");
    CHECK(contains(other, "namespace robots::iiwa {"));
    CHECK(other != text);
  }
  SUBCASE("a bad namespace is refused") {
    const CommandResult bad =
        generate(copy_one, "lbr_iiwa_link_0", "lbr_iiwa_link_7", one / "d.cuh", " --namespace '1x'");
    CHECK(bad.exit_code != 0);
    CHECK(contains(bad.err, "--namespace '1x'"));
  }
}

TEST_CASE("kiln-urdf-fk: Panda chain to panda_grasptarget folds the fixed flange, hand and grasp frames") {
  TempDir dir;
  const CommandResult result = generate(kRobots / "panda.urdf", "panda_link0", "panda_grasptarget", dir / "p.cuh");
  REQUIRE_MESSAGE(result.exit_code == 0, result.err);
  const std::string text = kiln::test::read_text(dir / "p.cuh");
  CHECK(contains(text, "kDof = 7;"));
  CHECK(contains(text, "folds fixed: panda_joint8 panda_hand_joint panda_grasptarget_hand"));
  CHECK(text == kiln::test::read_text(KILN_IK_HEADER_PANDA));
}

TEST_CASE("kiln-urdf-fk: a mimic joint in the chain is refused, naming the joint") {
  TempDir dir;
  const CommandResult result = generate(kRobots / "panda.urdf", "panda_link0", "panda_rightfinger", dir / "x.cuh");
  CHECK(result.exit_code != 0);
  CHECK(contains(result.err, "'panda_finger_joint2'"));
  CHECK(contains(result.err, "mimic"));
  CHECK(contains(result.err, "panda_finger_joint1"));
  CHECK_FALSE(fs::exists(dir / "x.cuh"));

  SUBCASE("a mimic joint on another branch does not matter") {
    const CommandResult ok =
        generate(fs::path(KILN_IK_TEST_DATA_DIR) / "mixed_chain.urdf", "world", "tool_tip", dir / "m.cuh");
    CHECK_MESSAGE(ok.exit_code == 0, ok.err);
    const CommandResult refused =
        generate(fs::path(KILN_IK_TEST_DATA_DIR) / "mixed_chain.urdf", "world", "side", dir / "s.cuh");
    CHECK(refused.exit_code != 0);
    CHECK(contains(refused.err, "'side_joint'"));
  }
}

TEST_CASE("kiln-urdf-fk: an unknown link is refused, listing the links there are") {
  TempDir dir;
  SUBCASE("tip") {
    const CommandResult result = generate(kRobots / "panda.urdf", "panda_link0", "panda_hnad", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "unknown link 'panda_hnad'"));
    CHECK(contains(result.err, "panda_hand"));
    CHECK(contains(result.err, "panda_grasptarget"));
    CHECK(contains(result.err, "panda_link0"));
  }
  SUBCASE("base") {
    const CommandResult result = generate(kRobots / "iiwa14.urdf", "base_link", "lbr_iiwa_link_7", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "unknown link 'base_link'"));
    CHECK(contains(result.err, "lbr_iiwa_link_0"));
  }
  CHECK_FALSE(fs::exists(dir / "x.cuh"));
}

TEST_CASE("kiln-urdf-fk: other refusals say what is wrong") {
  TempDir dir;
  SUBCASE("tip above base: the chain given tip-first") {
    const CommandResult result = generate(kRobots / "panda.urdf", "panda_link3", "panda_link1", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "the chain is given tip-first: link 'panda_link1' is an ancestor of link 'panda_link3'"));
    CHECK(contains(result.err, "swap them (--base panda_link1 --tip panda_link3)"));
  }
  SUBCASE("tip on another branch") {
    const CommandResult result = generate(kRobots / "panda.urdf", "panda_leftfinger", "panda_rightfinger", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "'panda_rightfinger' is not below link 'panda_leftfinger'"));
  }
  SUBCASE("no movable joint") {
    const CommandResult result = generate(kRobots / "panda.urdf", "panda_link8", "panda_grasptarget", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "no movable joint"));
  }
  SUBCASE("missing file") {
    const CommandResult result = generate(dir / "nothing.urdf", "a", "b", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "cannot read"));
    CHECK(contains(result.err, "nothing.urdf"));
  }
  SUBCASE("not a URDF") {
    kiln::test::write_text(dir / "broken.urdf", "<robot name=\"r\"><link name=\"a\"></robot>");
    const CommandResult result = generate(dir / "broken.urdf", "a", "b", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "broken.urdf"));
    CHECK(contains(result.err, "not a valid URDF"));
  }
  SUBCASE("floating joint") {
    kiln::test::write_text(dir / "floating.urdf",
                           "<robot name=\"r\"><link name=\"a\"/><link name=\"b\"/>"
                           "<joint name=\"free\" type=\"floating\"><parent link=\"a\"/><child link=\"b\"/></joint>"
                           "</robot>");
    const CommandResult result = generate(dir / "floating.urdf", "a", "b", dir / "x.cuh");
    CHECK(result.exit_code != 0);
    CHECK(contains(result.err, "'free'"));
    CHECK(contains(result.err, "floating"));
  }
  CHECK_FALSE(fs::exists(dir / "x.cuh"));
}
