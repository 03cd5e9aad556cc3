// Library exceptions (Boost.Filesystem, nlohmann, the standard library) never leave kiln's public
// API untyped. Every public entry point is a function-try-block ending in
//   } catch (...) { support::rethrow_typed("publishing " + what); }
// which lets kiln's own errors (and std::bad_alloc) through unchanged and turns the rest into
// kiln errors saying what was being done, the path and the fix.
#pragma once

#include <string>

namespace kiln::support {

// Only inside a catch handler (it rethrows the exception being handled).
[[noreturn]] void rethrow_typed(const std::string &doing);

// The fix an errno calls for, for messages: " (the disk is full: ...)", or "" when none helps.
std::string io_fix(int error);

}  // namespace kiln::support
