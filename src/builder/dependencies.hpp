// A unit's real header dependencies, as the compiler reports them (`-MMD -MF`, make syntax, as
// ninja and ccache's depend mode read them): recorded per unit in the object cache and in the
// built entry's provenance, so an edit to any header a unit includes -- declared in the recipe
// or not -- rebuilds exactly the units that include it, and a hit on an entry whose recorded
// headers changed is stale (builder.cpp). Not recorded: the toolkit's own headers (nvcc's
// identity covers them), the ABI headers and the generators' outputs (both in the keys already),
// system headers (-MMD leaves them out; the host compiler's identity covers them).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::builder {

// The prerequisites of every rule of a make-syntax depfile: `\`-newline continuations,
// `\ ` and `\#` escapes, `$$`; each path once, in order. A target is not a prerequisite.
std::vector<std::string> parse_depfile(const std::string &text);

// Where the files a unit depends on are, and which of them kiln records.
struct DependencyRoots {
  std::string recipe_dir;      // recorded as $RECIPE/...
  std::string abi_dir;         // skipped
  std::string staging_dir;     // skipped: the build's own ({gen}'s outputs, a CMake build directory)
  std::string toolkit_dir;     // skipped: the toolkit's include directory, where known (the
                               // directory of the cuda_runtime.h nvcc includes is skipped anyway)
  std::string compile_cwd;     // relative depfile paths are relative to the compile's directory
};

// A build's roots, symlinks resolved; the toolkit's include directory is the one beside nvcc's bin.
DependencyRoots dependency_roots(const std::string &recipe_dir, const std::string &abi_dir,
                                 const boost::filesystem::path &staging, const std::string &nvcc_path,
                                 const std::string &compile_cwd);

// The recorded form of a depfile's paths: absolute (or $RECIPE/...), sorted, without the
// unit's own source (empty: none), what DependencyRoots skips and the system's headers
// (/usr/include, /usr/local/include, /usr/lib/gcc: what -MMD leaves out, for depfiles
// written with -MD, as CMake's are).
std::vector<std::string> recorded_dependencies(const std::vector<std::string> &depfile_paths, const std::string &source,
                                               const DependencyRoots &roots);

// A recorded path as a file name ($RECIPE/ replaced).
boost::filesystem::path dependency_file(const std::string &recorded, const std::string &recipe_dir);

// Each recorded dependency's digest now (input_file_digest), "(missing)" where it is gone.
std::map<std::string, std::string> dependency_digests(const std::vector<std::string> &recorded, const std::string &recipe_dir);

// objects/<unit>-<base key>.deps: the dependencies of the last compile of a unit key, read
// back before the next build of it (nullopt: none recorded, or unreadable: the unit compiles).
std::optional<std::vector<std::string>> read_dependency_record(const boost::filesystem::path &file);
void write_dependency_record(const boost::filesystem::path &file, const std::vector<std::string> &recorded);

// A key that adds the dependencies' digests to `base`: a unit's (nvcc) or a project's (cmake).
std::string key_with_dependencies(const std::string &kind, const std::string &base,
                                  const std::map<std::string, std::string> &digests);

// The provenance field an entry records a dependency under ("dependency:$RECIPE/x.cuh").
constexpr const char *kDependencyField = "dependency:";
std::string dependency_field(const std::string &recorded);

}  // namespace kiln::builder
