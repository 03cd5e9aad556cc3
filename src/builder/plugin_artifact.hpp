// kiln internal: the last step of every plugin build (nvcc and cmake backends) -- the file the
// link wrote becomes an entry's plugin only once it passes what kiln_add_plugin checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

#include <kiln/recipe.hpp>

#include "builder/backend.hpp"

namespace kiln::builder {

struct FinishedPlugin {
  std::string bytes_digest;  // XXH3-128 of the stamped file
  std::uint64_t size = 0;
  std::uint32_t abi_version = 0;  // the newest plugin ABI its stamp offers
  std::vector<RobotModel> models;  // the robot models its .kiln.model section holds
};

// Checks the build stamp with its ABI and the unload rules (one export, no gnu-unique, no
// NODELETE) from the ELF itself, then writes `content_key` into the stamp, rewriting `artifact` in
// place (0755). A file that breaks a rule, or is no kiln plugin at all, is a BuildError naming
// the recipe and the fix (and written to `build_log`): nothing is published.
FinishedPlugin finish_plugin_artifact(const boost::filesystem::path &artifact, const std::string &content_key,
                                      const Recipe &recipe, const boost::filesystem::path &build_log);

// The finished plugin as what the compile step produced (meta.json's fields); the backend adds
// its units. cuda_toolkit_version: the toolkit that wrote its PTX.
void describe_plugin(Produced &produced, const Recipe &recipe, const FinishedPlugin &plugin, int cuda_toolkit_version);

}  // namespace kiln::builder
