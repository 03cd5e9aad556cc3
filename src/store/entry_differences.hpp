// What differs between two entries of one content key: a forced rebuild whose output is not
// byte-identical to the stored entry says so in a few words (LocalStore::commit_entry).
#pragma once

#include <string>

#include "store/entry.hpp"

namespace kiln::store {

namespace fs = boost::filesystem;

// "libx.so: 10240 -> 10248 bytes, first difference at byte 6518" (one size where both have
// it), one clause per file whose digest differs ("; "-joined); a file only one side has is
// named as new or gone. Both entries are valid by their own records; "" when no file differs.
// Never throws for a file it cannot read: that part is left out.
std::string describe_entry_differences(const fs::path &old_dir, const EntryMeta &old_meta, const fs::path &new_dir,
                                       const EntryMeta &new_meta);

}  // namespace kiln::store
