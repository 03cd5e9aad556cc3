// A generator's tool keys its step by its bytes (keys.cpp), and a tool is often a large binary
// (the URDF generator: 12 MB with debug information) that every hit would hash again: ~2 ms of
// a 3 ms budget. So its digest is remembered by the file's identity -- real path, device,
// inode, size, mtime, ctime -- in memory and beside `nvcc --version` in <cache>/toolchain.json
// (file_facts.hpp). A file changed within the last 2 s is not remembered (a write in the same
// timestamp tick would leave its identity as it was).
#pragma once

#include <string>

#include <boost/filesystem/path.hpp>

namespace kiln::builder {

struct ToolDigestMemo {
  boost::filesystem::path file;  // empty: memory only
  bool write = false;            // false for plans: read it, write nothing
};

// The digest keys.cpp gives a tool file (files::Hasher::add_file), remembered as above.
std::string tool_digest(const boost::filesystem::path &tool, const ToolDigestMemo &memo);

void reset_tool_digest_memo_for_tests();

}  // namespace kiln::builder
