#include "files/safety.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <kiln/errors.hpp>

#include "files/files.hpp"

namespace kiln::files {
namespace {

std::string octal(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// What a check is for, so that each refusal says what was at stake.
struct Purpose {
  const char *refusal;  // "refusing to run code from", "refusing to trust"
  const char *risk;     // what a writer could do
};
constexpr Purpose kCode{"refusing to run code from", "anyone could replace the code"};
constexpr Purpose kData{"refusing to trust", "anyone could point an artifact name at other code or roll it back"};
constexpr Purpose kWrite{"refusing to write into",
                         "anyone could plant files there that kiln's writers and sweeps would act on, or move kiln's "
                         "own files under them"};

// kAskEuid: geteuid() only when the owner is not root (root-owned passes for everyone), so a
// warm load of a root-owned store makes no such call; the rule is the same either way.
constexpr uid_t kAskEuid = static_cast<uid_t>(-1);

void check_stat(const std::string &path, const struct stat &info, bool must_be_file, const Purpose &purpose,
                uid_t me = kAskEuid) {
  // A symlink inside a store could be redirected by whoever controls its target; chmod cannot
  // fix that, so it gets its own message. (The store root itself was resolved at start-up.)
  if (S_ISLNK(info.st_mode)) {
    throw IntegrityError(std::string(purpose.refusal) + " " + path +
                         ": it is a symlink inside a store, and kiln follows no links inside a store (the link's "
                         "target could be changed under it); replace the link with the " +
                         (must_be_file ? "file" : "directory") + " it points to (or republish the artifact), or "
                         "point KILN_CACHE_DIR / KILN_STORE_PATH at the real location");
  }
  if (must_be_file && !S_ISREG(info.st_mode)) {
    throw IntegrityError(std::string(purpose.refusal) + " " + path +
                         ": it is not a regular file (a device, FIFO or directory in a store entry means the entry "
                         "was altered); republish the artifact");
  }
  if (info.st_uid != 0 && me == kAskEuid) me = ::geteuid();
  if (info.st_uid != me && info.st_uid != 0) {
    throw IntegrityError(std::string(purpose.refusal) + " " + path + ": owned by uid " + std::to_string(info.st_uid) +
                         ", not by you (uid " + std::to_string(me) +
                         ") or root; use a store you own (KILN_CACHE_DIR) or chown it");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    throw IntegrityError(std::string(purpose.refusal) + " " + path + ": mode " + octal(info.st_mode) +
                         " lets others write it, so " + purpose.risk + "; fix with: chmod go-w " + path);
  }
}

void check_one(const std::string &path, bool must_be_file, const Purpose &purpose, FileIdentity *identity = nullptr,
               uid_t me = kAskEuid) {
  struct stat info {};
  if (::lstat(path.c_str(), &info) != 0) {
    if (errno == ENOENT) throw NotFoundError("no file " + path);
    throw IoError("cannot stat " + path + ": " + std::strerror(errno));
  }
  check_stat(path, info, must_be_file, purpose, me);
  if (identity != nullptr) *identity = identity_of(info);
}

}  // namespace

namespace {

// `dir` and each directory above it up to `root` (the store root, included), by one rule.
// Plain string walking: this runs on every cold load, and path objects cost more than the lstat calls.
void check_up_to_root(std::string dir, const std::string &root, const Purpose &purpose) {
  const uid_t me = ::geteuid();
  for (;;) {
    check_one(dir, false, purpose, nullptr, me);
    const std::size_t slash = dir.rfind('/');
    if (dir == root || slash == std::string::npos || slash == 0) break;
    dir.resize(slash);
  }
}

}  // namespace

void check_directories(const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  const std::string path = file.string();
  const std::size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return;
  check_up_to_root(path.substr(0, slash), store_root.lexically_normal().string(), kCode);
}

void check_safe_to_write(const boost::filesystem::path &dir, const boost::filesystem::path &store_root) {
  std::string each = dir.lexically_normal().string();
  while (each.size() > 1 && each.back() == '/') each.pop_back();
  check_up_to_root(std::move(each), store_root.lexically_normal().string(), kWrite);
}

void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  check_one(file.string(), true, kCode);
  check_directories(file, store_root);
}

void check_safe_to_execute(const boost::filesystem::path &file, const boost::filesystem::path &store_root,
                           FileIdentity *identity) {
  check_one(file.string(), true, kCode, identity);
  check_directories(file, store_root);
}

void check_file_safe(const std::string &file, FileIdentity *identity) { check_one(file, true, kCode, identity); }

void check_store_file_safe(const std::string &file, FileIdentity *identity) { check_one(file, true, kData, identity); }

std::string read_store_record(const boost::filesystem::path &file, std::uint64_t max_bytes, FileIdentity *identity) {
  struct stat info {};
  std::string content;
  try {
    content = read_file(file, FileOrigin::store, max_bytes, &info, O_NOFOLLOW);
  } catch (const IoError &) {
    // O_NOFOLLOW refused a link (ELOOP): say what it is and how to fix it, as a check of the path would.
    struct stat link {};
    if (::lstat(file.c_str(), &link) == 0 && S_ISLNK(link.st_mode)) check_stat(file.string(), link, true, kData);
    throw;
  }
  check_stat(file.string(), info, true, kData);
  if (identity != nullptr) *identity = identity_of(info);
  return content;
}

FileIdentity check_fd_safe_to_execute(int fd, const std::string &file, std::uint64_t *links) {
  struct stat info {};
  if (::fstat(fd, &info) != 0) throw IoError("cannot stat " + file + ": " + std::strerror(errno));
  check_stat(file, info, true, kCode);
  if (links != nullptr) *links = static_cast<std::uint64_t>(info.st_nlink);
  return identity_of(info);
}

void check_safe_to_execute(int fd, const boost::filesystem::path &file, const boost::filesystem::path &store_root) {
  check_fd_safe_to_execute(fd, file.string());
  check_directories(file, store_root);
}

}  // namespace kiln::files
