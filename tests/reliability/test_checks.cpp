// The checks of the reliability suite must fail when a guarantee breaks: each damage a crash
// could plant (a partial entry, a torn manifest, a torn or dangling bykey pointer, an unswept
// staging directory) is planted by hand here and must be reported.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <boost/filesystem/operations.hpp>

#include "reliability/child.hpp"
#include "reliability/store_check.hpp"
#include "reliability/workspace.hpp"
#include "store/manifest.hpp"
#include "support/fixtures.hpp"

using namespace kiln::reliability;
using kiln::test::read_text;
using kiln::test::TempDir;
using kiln::test::write_text;
namespace fs = boost::filesystem;

namespace {

bool mentions(const StoreCheck &check, const std::string &part) {
  for (const auto &problem : check.problems) {
    if (problem.find(part) != std::string::npos) return true;
  }
  return false;
}

std::string key_of(const Workspace &ws, const std::string &name) {
  const auto manifest = kiln::store::read_manifest(ws.store() / "consumers" / "crash" / "manifest.json", "crash");
  REQUIRE(manifest);
  return manifest->artifacts.at(name).content_key;
}

}  // namespace

TEST_SUITE("checks") {
  TEST_CASE("checks: a whole store passes; each planted damage is reported") {
    TempDir dir;
    const Workspace ws(dir.path());
    for (const Op &op : {ws.publish("plug"), ws.build(Backend::fake_nvcc, "built", 0)}) {
      const Outcome outcome = run(op.argv, op.env, ws.root());
      REQUIRE_MESSAGE(outcome.ok(), op.label << ": " << outcome.describe());
    }
    const fs::path consumer = ws.store() / "consumers" / "crash";
    const fs::path entries = consumer / "store";
    const std::vector<Named> names = {{"crash", "plug"}, {"crash", "built"}, {"crash", "never-published"}};

    const StoreCheck whole = check_store(ws, names);
    CHECK_MESSAGE(whole.ok(), whole.report());
    CHECK(whole.entries == 2);
    CHECK(whole.named == 2);
    CHECK(whole.loaded == 2);
    CHECK(whole.absent == 1);
    CHECK(unswept(whole).empty());

    SUBCASE("an entry directory without meta.json (a staging directory renamed too early)") {
      const fs::path partial = entries / "0123456789abcdef0123456789abcdef";
      fs::create_directories(partial);
      fs::copy_file(KILN_TEST_PLUGIN_HOST_ONLY, partial / "libhost_only.so");
      CHECK(mentions(check_store(ws, names), "partial entry " + partial.string()));
    }
    SUBCASE("an entry whose artifact is truncated") {
      const fs::path entry = entries / key_of(ws, "plug");
      for (fs::directory_iterator it(entry), end; it != end; ++it) {
        if (it->path().extension() == ".so") {
          ::chmod(it->path().c_str(), 0644);
          write_text(it->path(), read_text(it->path()).substr(0, 100));
        }
      }
      const StoreCheck check = check_store(ws, names);
      CHECK(mentions(check, "partial entry " + entry.string()));
      CHECK(mentions(check, "crash/plug"));  // and its name no longer loads
    }
    SUBCASE("a torn manifest") {
      const std::string text = read_text(consumer / "manifest.json");
      write_text(consumer / "manifest.json", text.substr(0, text.size() / 2));
      CHECK(mentions(check_store(ws, names), "manifest of crash does not parse"));
    }
    SUBCASE("a manifest naming an entry that is not there") {
      std::string text = read_text(consumer / "manifest.json");
      const std::string key = key_of(ws, "plug");
      text.replace(text.find(key), key.size(), "fedcba9876543210fedcba9876543210");
      write_text(consumer / "manifest.json", text);
      CHECK(mentions(check_store(ws, names), "not a complete entry"));
    }
    SUBCASE("a torn bykey pointer, and one naming no entry") {
      fs::directory_iterator pointer(consumer / "bykey");
      REQUIRE(pointer != fs::directory_iterator());
      write_text(pointer->path(), key_of(ws, "built").substr(0, 10));
      CHECK(mentions(check_store(ws, names), "is torn"));
      write_text(pointer->path(), "fedcba9876543210fedcba9876543210\n");
      CHECK(mentions(check_store(ws, names), "which is not a complete entry"));
    }
    SUBCASE("a dead writer's staging directory left after the next writer") {
      // Its lock file is there and free: its writer died (kiln's sweep takes such a lock at once).
      fs::create_directories(entries / ".staging-v2-0123456789abcdef");
      write_text(entries / ".staging-v2-0123456789abcdef" / ".staging.lock", "");
      const StoreCheck check = check_store(ws, names);
      CHECK(check.ok());  // visible to nobody: not a problem in itself ...
      CHECK(unswept(check).size() == 1);  // ... but the next writer must have swept it
    }
    SUBCASE("a failed writer's ABI headers' staging copy and object-cache temp (what the full-disk test counts)") {
      const fs::path abi = ws.store() / "abi" / ".staging-0123-1-2", temp = consumer / "objects" / ".plugin.tmp-1-2-3";
      fs::create_directories(abi / "kiln");
      write_text(abi / "kiln" / "plugin.h", "");
      write_text(temp, "");
      const StoreCheck check = check_store(ws, names);
      CHECK(check.ok());
      CHECK(check.leftovers.at("ABI headers staging") == std::vector<std::string>{abi.string()});
      CHECK(check.leftovers.at("object temp") == std::vector<std::string>{temp.string()});
      CHECK(check.leftover_count() == 2);
    }
  }
}

TEST_SUITE("checks") {
  TEST_CASE("checks: the compile count sees a unit compiled twice, whatever its staging directory") {
    const std::string once =
        "--version\n"
        "-c /r/plugin.cu -o /s/.staging-1-2/obj/plugin.o -I/s/.staging-1-2/gen -DVARIANT=1\n"
        "-c /r/helper.cpp -o /s/.staging-1-2/obj/helper.o -I/s/.staging-1-2/gen -DVARIANT=1\n"
        "--shared -o /s/.staging-1-2/lib.so /s/.staging-1-2/obj/plugin.o /s/.staging-1-2/obj/helper.o\n"
        "-c /r/plugin.cu -o /s/.staging-2-7/obj/plugin.o -I/s/.staging-2-7/gen -DVARIANT=2\n";
    const CompileLog log = read_compile_log(once);
    CHECK(log.units.size() == 3);
    CHECK(log.links == 1);
    CHECK(log.probes == 1);
    CHECK(log.repeated().empty());
    const CompileLog twice =
        read_compile_log(once + "-c /r/plugin.cu -o /s/.staging-3-1/obj/plugin.o -I/s/.staging-3-1/gen -DVARIANT=1\n");
    REQUIRE(twice.repeated().size() == 1);
    CHECK(twice.repeated()[0].find("2 compiles of: -c /r/plugin.cu -I/s/.staging-*/gen -DVARIANT=1") == 0);
  }
}
