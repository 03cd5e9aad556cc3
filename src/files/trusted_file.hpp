// Files outside any store that decide which code kiln trusts: kiln.conf (it names the keys
// trusted to sign code), a trusted PATH.pub and the signing PATH.key. One rule for all of them,
// the load-time rule of store files (files/safety.hpp): owned by the effective user or root and
// not writable by group or others -- whoever can write one can make kiln accept their code.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>

#include <boost/filesystem/path.hpp>

namespace kiln::files {

// The bytes of `file` (a regular file of at most max_bytes), read through one descriptor whose
// fstat passed the rule: what was checked is what was read. `what` names the file in messages
// ("kiln config", "key file"). A symbolic link is refused unless `follow_links`. UsageError
// naming the file, its owner or mode and the fix; NotFoundError when absent. `opened` receives
// the descriptor's fstat.
std::string read_trusted_file(const boost::filesystem::path &file, const std::string &what, std::uint64_t max_bytes,
                              bool follow_links, struct stat *opened = nullptr);

// The rule alone, on a descriptor's fstat (UsageError as above).
void check_trusted_file(const struct stat &info, const std::string &file, const std::string &what);

}  // namespace kiln::files
