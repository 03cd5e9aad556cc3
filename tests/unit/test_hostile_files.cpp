// Reading files kiln did not write: FIFOs, devices and oversized
// files are refused at once with an error typed by whose file it is; and the name rule.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "files/digest.hpp"
#include "files/files.hpp"
#include "store/names.hpp"
#include "support/fixtures.hpp"
#include "support/hostile.hpp"

namespace fs = boost::filesystem;

TEST_CASE("names: a name may not end with '.' (\"hjcd-ik.\" would pass for \"hjcd-ik\")") {
  CHECK_FALSE(kiln::store::is_valid_name("hjcd-ik."));
  CHECK_FALSE(kiln::store::is_valid_name(".x"));
  CHECK_FALSE(kiln::store::is_valid_name("a."));
  CHECK(kiln::store::is_valid_name("a.b"));
  CHECK(kiln::store::is_valid_name("libik.so"));
  CHECK_THROWS_WITH_AS(kiln::store::validate_name("consumer", "hjcd-ik."), doctest::Contains("ends with '.'"),
                       kiln::UsageError);
}

TEST_CASE("files: FIFOs, devices and oversized files are refused at once, typed by whose file it is") {
  kiln::test::TempDir dir;
  const fs::path fifo = dir / "fifo";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const std::string outcome = kiln::test::run_in_child([&]() -> std::string {
    try {
      kiln::files::read_file(fifo);
      return "a FIFO store file was read";
    } catch (const kiln::IntegrityError &error) {
      if (std::string(error.what()).find(fifo.string()) == std::string::npos) return "no path in the message";
    }
    try {
      kiln::files::read_file(fifo, kiln::files::FileOrigin::input);
      return "a FIFO input was read";
    } catch (const kiln::UsageError &) {
    }
    try {
      kiln::files::Hasher().add_file("/dev/zero");
      return "/dev/zero was hashed";
    } catch (const kiln::UsageError &error) {
      if (std::string(error.what()).find("character device") == std::string::npos) return error.what();
    }
    try {
      kiln::files::digest_file(fifo);
      return "a FIFO was digested";
    } catch (const kiln::IntegrityError &) {
    }
    return "";
  });
  CHECK_MESSAGE(outcome.empty(), outcome);

  kiln::test::write_text(dir / "big", "{}");
  fs::resize_file(dir / "big", 1 << 20);
  CHECK_THROWS_WITH_AS(kiln::files::read_file(dir / "big", kiln::files::FileOrigin::store, 1000),
                       doctest::Contains("more than the 1000"), kiln::IntegrityError);
  CHECK(kiln::files::read_file(dir / "big").size() == (1u << 20));  // no limit unless asked
  CHECK_THROWS_AS(kiln::files::read_file(dir / "missing"), kiln::NotFoundError);
}
