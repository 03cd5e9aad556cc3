#include "support/typed_errors.hpp"

#include <cerrno>
#include <new>
#include <system_error>

#include <boost/filesystem/exception.hpp>
#include <nlohmann/json.hpp>

#include <kiln/errors.hpp>

namespace kiln::support {

std::string io_fix(int error) {
  switch (error) {
    case ENOSPC: return " (the disk is full: free space and retry; nothing was changed)";
    case EDQUOT: return " (the disk quota is exhausted: free space and retry; nothing was changed)";
    case EROFS: return " (read-only file system: point KILN_CACHE_DIR at a writable directory)";
    case EACCES:
    case EPERM: return " (check the owner and permissions of the path and its directories)";
    case EIO: return " (the device reported an I/O error: check the disk; the file was not trusted)";
    default: return "";
  }
}

void rethrow_typed(const std::string &doing) {
  try {
    throw;
  } catch (const Error &) {
    throw;
  } catch (const std::bad_alloc &) {
    throw;
  } catch (const boost::filesystem::filesystem_error &error) {
    std::string paths = error.path1().string();
    if (!error.path2().empty()) paths += ", " + error.path2().string();
    throw IoError(doing + ": " + (paths.empty() ? std::string() : paths + ": ") + error.code().message() +
                  io_fix(error.code().value()));
  } catch (const std::system_error &error) {
    const bool os = error.code().category() == std::system_category() ||
                    error.code().category() == std::generic_category();
    throw IoError(doing + ": " + error.what() + (os ? io_fix(error.code().value()) : std::string()));
  } catch (const nlohmann::json::exception &error) {
    // Every file kiln reads goes through checked readers: this is a kiln bug, not bad input.
    throw Error(ErrorKind::other, doing + ": unexpected JSON error (" + error.what() + "); please report it");
  } catch (const std::exception &error) {
    throw Error(ErrorKind::other, doing + ": " + error.what());
  } catch (...) {
    throw Error(ErrorKind::other, doing + ": an exception of unknown type");
  }
}

}  // namespace kiln::support
