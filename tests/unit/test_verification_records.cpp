// Persisted verification records (store/maintenance/verification_records.hpp): a record of the writable
// cache lets a load skip hashing a plugin file whose identity is unchanged, and nothing else
// does. Each case tampers with a published file (so that a hash would refuse it) and shows
// which records are trusted in place of the hash and which are not.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include <kiln/runtime.hpp>

#include "artifact/elf.hpp"
#include "files/file_identity.hpp"
#include "files/files.hpp"
#include "store/maintenance/verification_records.hpp"
#include "support/fixtures.hpp"
#include "support/plugin_store.hpp"

namespace kiln::test {
namespace {

namespace fs = boost::filesystem;

// Flips one byte of the file's .comment section (the compiler's version string): the file still
// loads, but its digest no longer matches the one its entry records. Writes in place (new ctime).
void tamper(const std::string &file) {
  const std::string bytes = files::read_file(file, files::FileOrigin::input);
  const auto comment = artifact::find_elf_section(bytes, ".comment");
  REQUIRE(comment);
  REQUIRE(comment->second > 1);
  ::chmod(file.c_str(), 0644);
  std::fstream out(file, std::ios::in | std::ios::out | std::ios::binary);
  out.seekp(static_cast<std::streamoff>(comment->first));
  const char flipped = static_cast<char>(bytes[comment->first] ^ 0x20);
  out.write(&flipped, 1);
  out.close();
  ::chmod(file.c_str(), 0755);
}

void wait_until_settled() {
  std::this_thread::sleep_for(store::VerificationRecords::kSettled + std::chrono::milliseconds(100));
}

std::string record_for(const std::string &key, const std::string &digest, const files::FileIdentity &id) {
  return "kiln-verified 1 " + key + " " + digest + " " + std::to_string(id.device) + " " + std::to_string(id.inode) +
         " " + std::to_string(id.size) + " " + std::to_string(id.mtime_ns) + " " + std::to_string(id.ctime_ns) + "\n";
}

void write_record(const fs::path &file, const std::string &text, unsigned mode = 0644) {
  fs::create_directories(file.parent_path());
  { std::ofstream(file.string(), std::ios::trunc) << text; }
  ::chmod(file.c_str(), mode);
}

}  // namespace

TEST_CASE("a settled plugin file's first load writes a verification record of its identity") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  const fs::path record = dir / "cache" / "verified" / published.content_key;

  { Module fresh = runtime.load("tests", "example"); }
  CHECK_MESSAGE(!fs::exists(record), "a file changed within kSettled gets no record (racy ctime)");

  wait_until_settled();
  tamper(published.file);  // a new identity, so this process verifies it again, and refuses it
  CHECK(has(error_of<IntegrityError>([&] { runtime.load("tests", "example"); }), "does not match its recorded digest"));
  CHECK_MESSAGE(!fs::exists(record), "a refused file gets no record");

  TempDir other;
  Runtime clean(store_options(other));
  const PublishResult good = publish_plugin(clean, KILN_TEST_PLUGIN_HOST_ONLY);
  wait_until_settled();
  { Module loaded = clean.load("tests", "example"); }
  const fs::path written = other / "cache" / "verified" / good.content_key;
  REQUIRE(fs::exists(written));
  const auto id = files::identify(good.file);
  REQUIRE(id);
  const Resolution resolution = clean.resolve("tests", "example");
  CHECK(files::read_file(written) == record_for(good.content_key, resolution.digest, *id));
}

TEST_CASE("a load trusts a verification record only for the exact identity, from a safe file") {
  TempDir dir;
  Runtime runtime(store_options(dir));
  const PublishResult published = publish_plugin(runtime, KILN_TEST_PLUGIN_HOST_ONLY);
  const std::string digest = runtime.resolve("tests", "example").digest;
  const fs::path record = dir / "cache" / "verified" / published.content_key;
  tamper(published.file);
  const auto id = files::identify(published.file);
  REQUIRE(id);
  const auto refused = [&] {
    return has(error_of<IntegrityError>([&] { runtime.load("tests", "example"); }), "does not match its recorded digest");
  };

  SUBCASE("no record: the file is hashed and refused") { CHECK(refused()); }

  SUBCASE("a record of another ctime (the file was written since): hashed and refused") {
    files::FileIdentity older = *id;
    older.ctime_ns -= 1;
    write_record(record, record_for(published.content_key, digest, older));
    CHECK(refused());
  }

  SUBCASE("a record others could have written (group-writable): ignored") {
    write_record(record, record_for(published.content_key, digest, *id), 0664);
    CHECK(refused());
  }

  SUBCASE("a record of another digest or a damaged record: ignored") {
    write_record(record, record_for(published.content_key, std::string(32, '0'), *id));
    CHECK(refused());
    write_record(record, "kiln-verified 1 " + published.content_key + " " + digest + " 12");
    CHECK(refused());
  }

  SUBCASE("a FIFO in the record's place: ignored without blocking") {
    fs::create_directories(record.parent_path());
    REQUIRE(::mkfifo(record.c_str(), 0644) == 0);
    CHECK(refused());
  }

  SUBCASE("a record of this exact identity stands in for the hash (what a fresh process relies on)") {
    write_record(record, record_for(published.content_key, digest, *id));
    Module loaded = runtime.load("tests", "example");
    CHECK(loaded.report().resolution.content_key == published.content_key);
  }
}

}  // namespace kiln::test
