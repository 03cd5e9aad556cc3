// Small file helpers of the build benches (recipes and logs they write and read back).
#pragma once

#include <fstream>
#include <sstream>
#include <string>

#include <boost/filesystem/path.hpp>

namespace kiln_bench {

inline void write_file(const boost::filesystem::path &file, const std::string &text) {
  std::ofstream out(file.string(), std::ios::binary | std::ios::trunc);
  out << text;
}

inline std::string read_file(const boost::filesystem::path &file) {
  std::ifstream in(file.string(), std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline int count_lines(const boost::filesystem::path &file) {
  std::ifstream in(file.string());
  int lines = 0;
  for (std::string line; std::getline(in, line);) ++lines;
  return lines;
}

}  // namespace kiln_bench
