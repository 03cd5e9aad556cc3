// Counting what a command left on disk: a refused plan or build must leave the store as it was.
#pragma once

#include <cstddef>

#include <boost/filesystem/operations.hpp>

namespace kiln::test {

// Regular files anywhere under dir (0 when dir does not exist).
inline std::size_t files_under(const boost::filesystem::path &dir) {
  namespace fs = boost::filesystem;
  if (!fs::exists(dir)) return 0;
  std::size_t count = 0;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) count += fs::is_regular_file(it->path()) ? 1 : 0;
  return count;
}

}  // namespace kiln::test
