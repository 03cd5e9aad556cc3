// What must hold in a store at every moment, whatever process was killed where: the checks the
// crash and concurrency suites run after each kill, and the leftovers a killed writer may leave.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

#include "reliability/workspace.hpp"

namespace kiln::reliability {

struct Named {
  std::string consumer, name;
};

// The files a killed writer can leave behind, by kind, and whether the next writer of the
// consumer must have removed them. This table is the one place that says what is swept.
struct LeftoverKind {
  const char *kind;
  const char *where;
  bool swept;  // the next publish or build (that builds) of the consumer removes it
};
const std::vector<LeftoverKind> &leftover_kinds();

struct StoreCheck {
  std::vector<std::string> problems;  // each a broken guarantee, naming the file
  int entries = 0;                    // complete entries in store/ directories
  int named = 0;                      // manifest records, each loaded or resolved and verified
  int loaded = 0;                     // ... of which loaded by `kiln load` (plugins)
  int absent = 0;                     // expected names that are cleanly absent (NotFoundError)
  std::map<std::string, std::vector<std::string>> leftovers;  // kind -> paths

  bool ok() const { return problems.empty(); }
  std::string report() const;  // the problems, one a line
  int leftover_count() const;
};

// Every manifest parses; every directory in store/ not starting with '.' is a complete entry
// (meta.json naming its own key, identity.json, every file with its recorded digest); every
// bykey pointer names a complete entry; every named artifact resolves, verifies and (plugins)
// loads through `kiln load`; `kiln ls` succeeds; each of `expected` is named and loads, or is
// cleanly absent (NotFoundError from Runtime::resolve); leftovers are listed by kind.
StoreCheck check_store(const Workspace &ws, const std::vector<Named> &expected, bool load_with_cli = true);

// Problems for leftovers of kinds marked swept that are still there.
std::vector<std::string> unswept(const StoreCheck &check);

// The compiler calls of a compile log (KILN_TEST_NVCC_LOG: one line per nvcc call, written by
// fake-nvcc.sh and tests/data/build/nvcc-wrapper.sh).
struct CompileLog {
  std::map<std::string, int> units;  // each `-c` command line, its -o removed -> how many times
  int links = 0;                     // `--shared` calls
  int probes = 0;                    // `--version` calls
  std::vector<std::string> repeated() const;  // units compiled more than once
};
CompileLog read_compile_log(const std::string &text);

}  // namespace kiln::reliability
