#include "support/bundle_world.hpp"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <archive.h>
#include <archive_entry.h>

#include <cstdio>
#include <cstring>
#include <memory>

#include <boost/filesystem/operations.hpp>
#include <doctest/doctest.h>

namespace kiln::test {
namespace {

// One 512-byte ustar header (names under 100 bytes).
std::string tar_header(const std::string &name, std::uint64_t size, char type, unsigned mode) {
  std::string header(512, '\0');
  const auto put = [&](std::size_t at, const std::string &text) { header.replace(at, text.size(), text); };
  char field[32];
  REQUIRE(name.size() < 100);
  put(0, name);
  std::snprintf(field, sizeof field, "%07o", mode);
  put(100, field);
  put(108, "0000000");
  put(116, "0000000");
  std::snprintf(field, sizeof field, "%011llo", static_cast<unsigned long long>(size));
  put(124, field);
  put(136, "00000000000");
  put(148, "        ");
  header[156] = type;
  put(257, std::string("ustar\0", 6) + "00");
  unsigned sum = 0;
  for (const unsigned char c : header) sum += c;
  std::snprintf(field, sizeof field, "%06o", sum);
  put(148, std::string(field) + std::string(1, '\0') + " ");
  return header;
}

std::string padded(std::string bytes) { return bytes.append((512 - bytes.size() % 512) % 512, '\0'); }

// A pax record: "<length> key=value\n", the length counting itself.
std::string pax_record(const std::string &key, const std::string &value) {
  const std::string body = " " + key + "=" + value + "\n";
  std::size_t length = body.size() + 1;
  while (std::to_string(length).size() + body.size() != length) length = std::to_string(length).size() + body.size();
  return std::to_string(length) + body;
}

}  // namespace


Member plain(std::string name, std::string bytes) {
  Member member;
  member.name = std::move(name);
  member.bytes = std::move(bytes);
  return member;
}

Member special(std::string name, unsigned type, std::string link) {
  Member member;
  member.name = std::move(name);
  member.type = type;
  member.link = std::move(link);
  return member;
}

std::vector<Member> read_members(const fs::path &bundle) {
  std::unique_ptr<archive, decltype(&archive_read_free)> reader(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(reader.get());
  archive_read_support_format_all(reader.get());
  REQUIRE(archive_read_open_filename(reader.get(), bundle.c_str(), 65536) == ARCHIVE_OK);
  std::vector<Member> members;
  archive_entry *entry = nullptr;
  while (archive_read_next_header(reader.get(), &entry) == ARCHIVE_OK) {
    Member member;
    member.name = archive_entry_pathname(entry);
    member.mode = archive_entry_perm(entry);
    char buffer[65536];
    la_ssize_t got = 0;
    while ((got = archive_read_data(reader.get(), buffer, sizeof buffer)) > 0) member.bytes.append(buffer, got);
    REQUIRE(got == 0);
    members.push_back(std::move(member));
  }
  return members;
}

void write_members(const fs::path &bundle, const std::vector<Member> &members, bool zstd) {
  std::unique_ptr<archive, decltype(&archive_write_free)> writer(archive_write_new(), archive_write_free);
  REQUIRE(archive_write_set_format_pax_restricted(writer.get()) == ARCHIVE_OK);
  if (zstd) REQUIRE(archive_write_add_filter_zstd(writer.get()) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(writer.get(), bundle.c_str()) == ARCHIVE_OK);
  for (const auto &member : members) {
    std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
    archive_entry_set_pathname(entry.get(), member.name.c_str());
    archive_entry_set_filetype(entry.get(), member.type);
    archive_entry_set_perm(entry.get(), member.mode);
    if (member.type == AE_IFLNK) archive_entry_set_symlink(entry.get(), member.link.c_str());
    if (member.type == AE_IFCHR) archive_entry_set_rdev(entry.get(), makedev(1, 3));
    if (member.type == AE_IFREG && !member.link.empty()) archive_entry_set_hardlink(entry.get(), member.link.c_str());
    const bool has_data = member.type == AE_IFREG && member.link.empty();
    archive_entry_set_size(entry.get(), has_data ? (member.header_size >= 0 ? member.header_size
                                                                             : static_cast<std::int64_t>(member.bytes.size()))
                                                 : 0);
    REQUIRE(archive_write_header(writer.get(), entry.get()) == ARCHIVE_OK);
    if (has_data && !member.bytes.empty()) archive_write_data(writer.get(), member.bytes.data(), member.bytes.size());
  }
  REQUIRE(archive_write_close(writer.get()) == ARCHIVE_OK);
}

Member &find_member(std::vector<Member> &members, const std::string &suffix) {
  for (auto &member : members) {
    if (member.name.size() >= suffix.size() && member.name.compare(member.name.size() - suffix.size(), suffix.size(), suffix) == 0) {
      return member;
    }
  }
  FAIL("no member ending in " << suffix);
  throw std::logic_error("unreachable");
}

// Nothing an import could have left: no entry, no staging directory, no manifest.
void check_nothing_in(const fs::path &root) {
  boost::system::error_code error;
  if (!fs::exists(root, error)) return;
  CHECK_MESSAGE(!fs::exists(root / "consumers" / "tests" / "manifest.json"), "manifest written in " << root);
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    const std::string path = it->path().string();
    CHECK_MESSAGE(path.find(".staging-") == std::string::npos, "staging left: " << path);
    CHECK_MESSAGE(it->path().filename() != "manifest.json", "manifest written: " << path);
    CHECK_MESSAGE(it->path().parent_path().filename() != "store", "entry left: " << path);
  }
}

// Every file below root with its bytes: "unchanged" means equal maps.
std::map<std::string, std::string> file_contents(const fs::path &root) {
  std::map<std::string, std::string> files;
  for (fs::recursive_directory_iterator it(root), end; it != end; ++it) {
    if (fs::is_regular_file(it->path()) && it->path().extension() != ".lock") files[it->path().string()] = read_text(it->path());
  }
  return files;
}

void write_sparse_bomb(const fs::path &bundle, const std::vector<Member> &members, const std::string &bomb,
                       std::uint64_t hole) {
  std::string tar;
  for (const auto &member : members) {
    if (member.name != bomb) {
      tar += tar_header(member.name, member.bytes.size(), '0', member.mode) + padded(member.bytes);
      continue;
    }
    const std::string pax = pax_record("GNU.sparse.major", "1") + pax_record("GNU.sparse.minor", "0") +
                            pax_record("GNU.sparse.name", member.name) +
                            pax_record("GNU.sparse.realsize", std::to_string(member.bytes.size()));
    const std::string map = padded("1\n" + std::to_string(hole) + "\n" + std::to_string(member.bytes.size()) + "\n");
    tar += tar_header("PaxHeaders/bomb", pax.size(), 'x', 0644) + padded(pax);
    tar += tar_header("GNUSparseFile.0/bomb", map.size() + member.bytes.size(), '0', member.mode) + map +
           padded(member.bytes);
  }
  tar += std::string(1024, '\0');
  std::unique_ptr<archive, decltype(&archive_write_free)> writer(archive_write_new(), archive_write_free);
  REQUIRE(archive_write_set_format_raw(writer.get()) == ARCHIVE_OK);
  REQUIRE(archive_write_add_filter_zstd(writer.get()) == ARCHIVE_OK);
  REQUIRE(archive_write_open_filename(writer.get(), bundle.c_str()) == ARCHIVE_OK);
  std::unique_ptr<archive_entry, decltype(&archive_entry_free)> entry(archive_entry_new(), archive_entry_free);
  archive_entry_set_pathname(entry.get(), "tar");
  archive_entry_set_filetype(entry.get(), AE_IFREG);
  archive_entry_set_size(entry.get(), static_cast<la_int64_t>(tar.size()));
  REQUIRE(archive_write_header(writer.get(), entry.get()) == ARCHIVE_OK);
  REQUIRE(archive_write_data(writer.get(), tar.data(), tar.size()) == static_cast<la_ssize_t>(tar.size()));
  REQUIRE(archive_write_close(writer.get()) == ARCHIVE_OK);
}

}  // namespace kiln::test
