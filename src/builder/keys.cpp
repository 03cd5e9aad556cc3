#include "builder/keys.hpp"

#include <algorithm>
#include <cstdlib>
#include <mutex>

#include <boost/filesystem/operations.hpp>
#include <nlohmann/json.hpp>

#include <kiln/version.hpp>

#include "builder/backends/cmake_recipe.hpp"
#include "files/digest.hpp"
#include "support/json_write.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

std::vector<std::string> files_under(const fs::path &dir) {
  std::vector<std::string> files;
  for (fs::recursive_directory_iterator it(dir), end; it != end; ++it) {
    if (fs::is_regular_file(it->status())) files.push_back(it->path().string());
  }
  std::sort(files.begin(), files.end());
  return files;
}

}  // namespace

std::string relative_to(const std::string &path, const std::string &base) {
  const fs::path rel = fs::path(path).lexically_relative(base);
  return rel.empty() ? path : rel.string();
}

std::string input_file_digest(const boost::filesystem::path &file) {
  files::Hasher hasher;
  hasher.add_file(file);
  return hasher.hex();
}

std::string arch_list(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

std::map<std::string, std::string> BuildIdentity::fields() const {
  std::map<std::string, std::string> out = {
      {"key_schema", std::to_string(kKeySchema)},
      {"artifact_schema", std::to_string(kArtifactSchema)},
      {"kiln_version", kVersion},
      {"archs", arch_list(archs)},
  };
  if (backend == "nvcc" || backend == "cmake") {  // exactly the fields nvcc builds always had: their keys stay put
    out["abi_version"] = std::to_string(kAbiVersion);
    out["nvcc_version"] = toolchain.nvcc_version;
    out["host_compiler"] = toolchain.host_cxx_version;
    out["abi_headers"] = abi_headers;
    if (backend == "cmake") {
      out["backend"] = backend;
      out["cmake_version"] = cmake.version;
    }
  } else {
    out["backend"] = backend;
    out["jit_toolchain"] = jit_toolchain;
  }
  for (const auto &[name, digest] : generators) out["generator." + name] = digest;
  // The toolchain's environment (nvcc, cmake; toolchain_environment): a build inherits kiln's, so
  // NVCC_APPEND_FLAGS=-DX or a CPATH header keys it like a flag in the recipe. None set: the keys of old.
  for (const auto &[name, value] : toolchain.environment) out["env." + name] = value;
  return out;
}

std::map<std::string, std::string> toolchain_environment(const std::string &backend) {
  // nvcc's own (its manual, "NVCC environment variables"), then the GNU toolchain's search paths.
  static const char *const kNvcc[] = {"NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN",    "CPATH",
                                      "C_INCLUDE_PATH",     "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "GCC_EXEC_PREFIX",
                                      "COMPILER_PATH"};
  // What CMake reads when it configures: compilers, flags, archs, the build type, package search.
  static const char *const kCmake[] = {"CC",       "CXX",        "CUDACXX",          "CUDAHOSTCXX",       "CFLAGS",
                                       "CXXFLAGS", "CUDAFLAGS",  "LDFLAGS",          "CUDAARCHS",         "CMAKE_BUILD_TYPE",
                                       "CMAKE_PREFIX_PATH", "CMAKE_TOOLCHAIN_FILE", "CMAKE_CUDA_ARCHITECTURES"};
  std::map<std::string, std::string> out;
  const auto take = [&out](const char *name) {
    if (const char *value = ::secure_getenv(name); value != nullptr && *value != '\0') out[name] = value;
  };
  for (const char *name : kNvcc) take(name);
  if (backend == "cmake") {
    for (const char *name : kCmake) take(name);
  }
  return out;
}

std::vector<std::string> expand_headers(const Recipe &recipe) {
  std::vector<std::string> out;
  for (const auto &header : recipe.headers) {
    if (fs::is_directory(header)) {
      const auto files = files_under(header);
      out.insert(out.end(), files.begin(), files.end());
    } else {
      out.push_back(header);
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::string abi_files_digest(const std::vector<std::pair<std::string, std::string>> &files) {
  files::Hasher hasher;
  for (const auto &[path, digest] : files) {
    hasher.add_field("file", path);
    hasher.add_field("bytes", digest);
  }
  return hasher.hex();
}

namespace {

std::mutex abi_memo_mutex;
std::map<std::string, std::string> abi_memo;

}  // namespace

void remember_abi_digest(const std::string &abi_dir, const std::string &digest) {
  std::lock_guard<std::mutex> lock(abi_memo_mutex);
  abi_memo[abi_dir] = digest;
}

std::string abi_headers_digest(const std::string &abi_dir) {
  std::lock_guard<std::mutex> lock(abi_memo_mutex);
  auto &slot = abi_memo[abi_dir];
  if (slot.empty()) {
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto &file : files_under(fs::path(abi_dir) / "kiln")) {
      files.emplace_back(relative_to(file, abi_dir), input_file_digest(file));
    }
    slot = abi_files_digest(files);
  }
  return slot;
}

namespace {

void add_generators(const Recipe &recipe, BuildIdentity &identity, const ToolDigestMemo &tools) {
  for (const auto &generator : recipe.generators) {
    if (!generator.tool.empty()) {
      identity.generators[generator.name] = tool_digest(generator.tool, tools) +
                                            (generator.tool_identity.empty() ? "" : " " + generator.tool_identity);
    } else {
      identity.generators[generator.name] = generator.tool_identity;
    }
  }
}

}  // namespace

BuildIdentity build_identity(const Recipe &recipe, const std::vector<Arch> &archs, const ToolchainIdentity &toolchain,
                             const std::string &abi_dir, const ToolDigestMemo &tools) {
  BuildIdentity identity;
  identity.archs = archs;
  identity.toolchain = toolchain;
  identity.abi_headers = abi_headers_digest(abi_dir);
  add_generators(recipe, identity, tools);
  return identity;
}

BuildIdentity cmake_build_identity(const Recipe &recipe, const std::vector<Arch> &archs,
                                   const ToolchainIdentity &toolchain, const CmakeIdentity &cmake,
                                   const std::string &abi_dir, const ToolDigestMemo &tools) {
  BuildIdentity identity = build_identity(recipe, archs, toolchain, abi_dir, tools);
  identity.backend = recipe.backend;
  identity.cmake = cmake;
  return identity;
}

BuildIdentity jit_build_identity(const Recipe &recipe, const std::vector<Arch> &archs, const std::string &jit_toolchain,
                                 const ToolDigestMemo &tools) {
  BuildIdentity identity;
  identity.backend = recipe.backend;
  identity.archs = archs;
  identity.jit_toolchain = jit_toolchain;
  add_generators(recipe, identity, tools);
  return identity;
}

// Sources and headers are recorded per file (by input_key), defines per name; every other
// recipe field as its JSON.
void add_recipe_records(const Recipe &recipe, const BuildIdentity &identity, InputRecords &records) {
  const auto canonical = nlohmann::json::parse(recipe.canonical_json());
  for (const auto &[field, value] : canonical.items()) {
    if (field == "consumer" || field == "name" || field == "sources" || field == "headers" || field == "defines" ||
        field == "cmake_options") {
      continue;
    }
    records["input:recipe " + field] = support::dump_json(value);
  }
  for (const auto &define : recipe.defines) {
    const auto equals = define.find('=');
    records["input:define " + define.substr(0, equals)] = equals == std::string::npos ? "(set)" : define.substr(equals + 1);
  }
  for (const auto &[option, value] : recipe.cmake_options) records["input:option " + option] = value;
  if (identity.backend == "cmake") records["toolchain:cmake_path"] = identity.cmake.path;
  if (identity.backend == "nvcc" || identity.backend == "cmake") {
    records["toolchain:nvcc_release"] = identity.toolchain.nvcc_release;
    records["toolchain:nvcc_path"] = identity.toolchain.nvcc_path;
    records["toolchain:host_compiler_path"] = identity.toolchain.host_cxx_path;
  }
}

std::string input_key(const Recipe &recipe, const BuildIdentity &identity, InputRecords *records) {
  files::Hasher hasher;
  hasher.add_field("key", "input").add_field("recipe", recipe.canonical_json());
  const auto add_files = [&](const char *role, const std::vector<std::string> &files) {
    for (const auto &file : files) {
      const std::string name = relative_to(file, recipe.base_dir);
      hasher.add_field(role, name);
      files::Hasher content;
      content.add_file(file);
      const std::string digest = content.hex();
      hasher.add_field("bytes", digest);
      if (records != nullptr) (*records)[std::string("input:") + role + " " + name] = digest;
    }
  };
  add_files("source", recipe.sources);
  add_files("header", expand_headers(recipe));
  for (const auto &generator : recipe.generators) add_files("generator_input", generator.inputs);
  if (recipe.backend == "cmake") {
    std::vector<std::string> project_files;
    for (const auto &file : expand_project_files(recipe)) project_files.push_back(file.path);
    add_files("project_file", project_files);
  }
  // The canonical JSON holds bytes that are not UTF-8 (a Latin-1 path given through the API) as
  // U+FFFD: the paths it holds that no field above covers key here once more, as raw bytes.
  std::vector<std::string> paths;
  for (const auto &dir : recipe.include_dirs) paths.push_back(relative_to(dir, recipe.base_dir));
  for (const auto &header : recipe.headers) paths.push_back(relative_to(header, recipe.base_dir));
  for (const auto &generator : recipe.generators) paths.push_back(relative_to(generator.tool, recipe.base_dir));
  for (const auto &kernel : recipe.kernels) paths.push_back(relative_to(kernel.source, recipe.base_dir));
  if (!recipe.project.empty()) paths.push_back(relative_to(recipe.project, recipe.base_dir));
  hasher.add_list("paths", paths);
  for (const auto &[field, value] : identity.fields()) hasher.add_field(field, value);
  return hasher.hex();
}

std::vector<Reason> identity_differences(const std::map<std::string, std::string> &recorded,
                                         const std::map<std::string, std::string> &current) {
  std::vector<Reason> reasons;
  for (const auto &[field, value] : current) {
    const auto it = recorded.find(field);
    const std::string was = it == recorded.end() ? "(none)" : it->second;
    if (was != value) reasons.push_back({field, was, value, ""});
  }
  return reasons;
}

}  // namespace kiln::builder
