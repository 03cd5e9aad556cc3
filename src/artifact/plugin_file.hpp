// What kiln checks of a plugin file from its bytes alone, before any of its code can run: the
// ELF facts (this machine, whole, a shared object), the unload rules kiln_add_plugin enforces
// (abi/README.md §9) and the build stamp with the ABI it records. `kiln publish` and the
// recipe build's link step both run these, so a file the store accepts is one that can load.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "artifact/elf.hpp"
#include "artifact/stamp.hpp"

namespace kiln::artifact {

// Each broken unload rule as one line naming the offending symbols and the fix: a defined
// dynamic symbol besides kiln_plugin_negotiate, an STB_GNU_UNIQUE symbol, DF_1_NODELETE, or no
// kiln_plugin_negotiate function at all. Empty when every rule holds.
std::vector<std::string> unload_rule_problems(const ElfFacts &elf);

// "<file> breaks the plugin rules of abi/README.md §9 (it could not be unloaded, or it could
// disturb the host's symbols):" followed by the problems, one per line.
std::string describe_unload_problems(const std::string &file, const std::vector<std::string> &problems);

// Refuses (AbiError) a stamp whose ABI major is not this kiln's, naming what the file offers.
void check_stamp_abi(const FileStamp &stamp, const std::string &file);

// The stamp of a file whose single stamp was established when it was published or built (its
// digest proved since): from the .kiln_stamp section where there is one (the KILN_PLUGIN helper
// puts it there), a few header reads instead of a search through every byte, which costs more
// than the digest; a file without the section is searched (find_stamp's errors).
FileStamp stamp_of(std::string_view bytes, const std::string &file);

// Everything above for `kiln publish`: read_elf's AbiError / IntegrityError, AbiError for the
// unload rules, find_stamp's AbiError and check_stamp_abi. Returns the stamp.
FileStamp check_plugin_file(std::string_view bytes, const std::string &file);

}  // namespace kiln::artifact
