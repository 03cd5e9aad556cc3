// A generator tool's digest is remembered by its file identity (builder/tool_digests.hpp): the
// same key as hashing it, a changed tool is hashed_as_keys_do again, a plan writes no memo, a fresh file
// (changed within 2 s) is not remembered, a torn memo is only a miss.
#include <doctest/doctest.h>

#include <chrono>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include "builder/tool_digests.hpp"
#include "files/digest.hpp"
#include "support/fixtures.hpp"

namespace fs = boost::filesystem;
using kiln::builder::tool_digest;
using kiln::builder::ToolDigestMemo;
using kiln::test::write_text;

namespace {

std::string hashed_as_keys_do(const fs::path &file) {
  kiln::files::Hasher hasher;
  hasher.add_file(file);
  return hasher.hex();
}

}  // namespace

TEST_CASE("tool digests: remembered by file identity, the same key as hashing, a change hashed_as_keys_do again") {
  kiln::test::TempDir dir;
  const fs::path tool = dir / "tool", memo = dir / "cache" / "toolchain.json";
  write_text(tool, "version 1 of the tool\n");
  kiln::builder::reset_tool_digest_memo_for_tests();

  // Just written (its ctime is now): hashed_as_keys_do, and not remembered anywhere.
  CHECK(tool_digest(tool, {memo, true}) == hashed_as_keys_do(tool));
  CHECK_FALSE(fs::exists(memo));

  // Only a file unchanged for 2 s is remembered (its ctime cannot be set back: wait).
  const fs::path old_tool = tool;
  std::this_thread::sleep_for(std::chrono::milliseconds(2100));
  CHECK(tool_digest(old_tool, {memo, false}) == hashed_as_keys_do(old_tool));  // a plan: nothing written
  CHECK_FALSE(fs::exists(memo));
  kiln::builder::reset_tool_digest_memo_for_tests();
  CHECK(tool_digest(old_tool, {memo, true}) == hashed_as_keys_do(old_tool));
  REQUIRE(fs::exists(memo));
  CHECK(kiln::test::read_text(memo).find(hashed_as_keys_do(old_tool)) != std::string::npos);

  // A fresh process (no memory) takes it from the file; a changed tool (same size) is hashed_as_keys_do again.
  kiln::builder::reset_tool_digest_memo_for_tests();
  const std::string before = tool_digest(old_tool, {memo, true});
  CHECK(before == hashed_as_keys_do(old_tool));
  std::string bytes = kiln::test::read_text(old_tool);
  bytes[0] = bytes[0] == '#' ? '!' : '#';
  write_text(old_tool, bytes);
  CHECK(tool_digest(old_tool, {memo, true}) == hashed_as_keys_do(old_tool));
  CHECK(tool_digest(old_tool, {memo, true}) != before);

  // A torn memo is a miss, not an error.
  write_text(memo, "{\"format\": 1, \"tools\": {");
  kiln::builder::reset_tool_digest_memo_for_tests();
  CHECK(tool_digest(old_tool, {memo, true}) == hashed_as_keys_do(old_tool));
}
