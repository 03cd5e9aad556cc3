// The CLI's reference text, one table each: exit codes, environment variables and an example per
// verb. `kiln --help`, each verb's --help, the man page and docs/cli.md tell the same (a test
// compares the environment table with docs/cli.md's).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::cli {

struct ReferenceRow {
  const char *name;     // exit code, variable, or verb
  const char *meaning;  // one line; for a verb, its example command line
};

const std::vector<ReferenceRow> &exit_codes();
const std::vector<ReferenceRow> &environment();
const std::vector<ReferenceRow> &examples();

// "Example:" lines of a verb (`verb` as in "remote"), empty when the table has none.
std::string example_footer(const std::string &verb);
// Exit codes and environment, as `kiln --help` ends.
std::string help_footer();

// What this kiln is and was built with: the version, the plugin ABI, the build.
nlohmann::json version_json();

}  // namespace kiln::cli
