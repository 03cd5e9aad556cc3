#include "builder/toolchain.hpp"

#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/errors.hpp>

#include "builder/file_facts.hpp"
#include "builder/process.hpp"
#include "files/digest.hpp"
#include "files/file_identity.hpp"
#include "files/files.hpp"
#include "support/environment.hpp"

namespace kiln::builder {
namespace {

namespace fs = boost::filesystem;

const char *const default_cuda_dir = "/usr/local/cuda";

using support::env_value;

std::string path_env() { return env_value("PATH").value_or(""); }

std::vector<std::string> lines_of(const std::string &text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    if (!line.empty()) lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

// `what_for` names the tool in messages, `variable` the setting that picks another one.
std::string version_output(const std::string &executable, const std::string &what_for, const std::string &variable) {
  ProcessSpec spec;
  spec.argv = {executable, "--version"};
  const ProcessResult result = run_process(spec);
  if (!result.ok() || lines_of(result.output).empty()) {
    const std::string how = result.signal != 0 ? "was killed by signal " + std::to_string(result.signal)
                                               : "exited with status " + std::to_string(result.exit_code);
    throw BuildError("`" + executable + " --version` " + how + (result.ok() ? " but printed nothing" : "") +
                         ": the " + what_for + " does not run; repair its installation or point " +
                         variable + " at a working one",
                     result.output);
  }
  return result.output;
}

std::string release_of(const std::string &nvcc_output) {
  static const std::regex full(R"(release \d+\.\d+, V(\d+\.\d+\.\d+))");
  static const std::regex short_form(R"(release (\d+\.\d+))");
  std::smatch match;
  if (std::regex_search(nvcc_output, match, full) || std::regex_search(nvcc_output, match, short_form)) return match[1];
  return "";
}

struct Memo {
  FileKey nvcc;
  FileKey host_cxx;
  ToolchainIdentity identity;
};

std::mutex memo_guard;
std::map<std::string, Memo> memos;  // by cache file
std::map<std::string, std::pair<FileKey, CmakeIdentity>> cmake_memos;  // by cache file

// The remembered `--version` output of each executable, else a fresh run of it (also written
// to the cache file). Called with memo_guard held.
class VersionOutputs {
 public:
  explicit VersionOutputs(const fs::path &cache_file) : facts_(cache_file) {}
  std::string of(const std::string &executable, const FileKey &key, const std::string &what_for, const std::string &variable) {
    if (auto cached = facts_.get(key, "version_output"); cached && !lines_of(*cached).empty()) return *cached;
    std::string output = version_output(executable, what_for, variable);
    facts_.put(key, "version_output", output);
    return output;
  }
  // nvcc's `--list-gpu-code` (sm_75 ... one a line); empty where it fails (an old nvcc, a wrapper).
  std::string gpu_codes(const std::string &nvcc, const FileKey &key) {
    if (auto cached = facts_.get(key, "gpu_code_output")) return *cached;
    ProcessSpec spec;
    spec.argv = {nvcc, "--list-gpu-code"};
    spec.timeout_seconds = 20;  // a wrapper that hangs on it costs that once, then nothing is checked
    const ProcessResult result = run_process(spec);
    std::string output = result.ok() ? result.output : std::string();
    facts_.put(key, "gpu_code_output", output);
    return output;
  }
  void remember() { facts_.save(); }

 private:
  FileFacts facts_;
};

}  // namespace

std::string find_nvcc() {
  if (const auto explicit_nvcc = env_value("KILN_NVCC")) {
    const std::string found = find_executable(*explicit_nvcc, path_env());
    if (!found.empty()) return found;
    throw ToolchainMissingError("KILN_NVCC=" + *explicit_nvcc +
                        " is not an executable file: point it at nvcc (e.g. /usr/local/cuda/bin/nvcc), or unset "
                        "it to search CUDA_HOME, CUDA_PATH, PATH and /usr/local/cuda");
  }
  std::vector<std::string> looked = {"KILN_NVCC (unset)"};
  for (const char *home : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const auto dir = env_value(home)) {
      const std::string candidate = *dir + "/bin/nvcc";
      if (!find_executable(candidate, "").empty()) return candidate;
      looked.push_back("$" + std::string(home) + "/bin/nvcc = " + candidate + " (missing)");
    } else {
      looked.push_back(std::string(home) + " (unset)");
    }
  }
  const std::string search_path = path_env();
  const std::string on_path = find_executable("nvcc", search_path);
  if (!on_path.empty()) return on_path;
  looked.push_back("nvcc in PATH (" + (search_path.empty() ? std::string("PATH empty") : search_path) + ")");
  const std::string fallback = env_value("KILN_CUDA_FALLBACK_DIR").value_or(default_cuda_dir) + "/bin/nvcc";
  if (!find_executable(fallback, "").empty()) return fallback;
  looked.push_back(fallback + " (missing)");

  std::string message = "nvcc not found; looked at:";
  for (const auto &place : looked) message += "\n  " + place;
  message +=
      "\nInstall the CUDA toolkit, or set KILN_NVCC to nvcc's path (or CUDA_HOME to the toolkit's directory). "
      "Only building needs nvcc: a prepared artifact (already in the store, or published with `kiln publish`) "
      "still loads on a machine without a toolchain.";
  throw ToolchainMissingError(message);
}

std::string find_host_compiler() {
  const std::string search_path = path_env();
  for (const char *variable : {"KILN_HOST_CXX", "CXX"}) {
    if (const auto value = env_value(variable)) {
      const std::string found = find_executable(*value, search_path);
      if (!found.empty()) return found;
      throw NotFoundError(std::string(variable) + "=" + *value +
                          " is not an executable file (nor a program in PATH): point it at the host C++ compiler "
                          "for nvcc (e.g. /usr/bin/g++), or unset it");
    }
  }
  const std::string found = find_executable("g++", search_path);
  if (!found.empty()) return found;
  throw NotFoundError("no host C++ compiler: g++ is not in PATH (" + search_path +
                      ") and neither KILN_HOST_CXX nor CXX is set; install g++ (nvcc needs a host compiler) or "
                      "set KILN_HOST_CXX to one");
}

std::string ToolchainIdentity::digest() const {
  files::Hasher hasher;
  hasher.add_field("nvcc_path", nvcc_path)
      .add_field("nvcc_version", nvcc_version)
      .add_field("host_cxx_path", host_cxx_path)
      .add_field("host_cxx_version", host_cxx_version);
  for (const auto &[name, value] : environment) hasher.add_field("env." + name, value);
  return hasher.hex();
}

ToolchainIdentity identify_toolchain(const fs::path &cache_file) {
  const std::string nvcc = find_nvcc();
  const std::string host_cxx = find_host_compiler();
  const FileKey nvcc_key = file_key_of(nvcc);
  const FileKey host_key = file_key_of(host_cxx);

  // One lock for everything: concurrent first calls in a process run `--version` once.
  std::lock_guard<std::mutex> lock(memo_guard);
  const auto memo = memos.find(cache_file.string());
  if (memo != memos.end() && memo->second.nvcc == nvcc_key && memo->second.host_cxx == host_key) {
    ToolchainIdentity identity = memo->second.identity;
    identity.host_cxx_command = host_cxx;
    return identity;
  }

  VersionOutputs outputs(cache_file);
  const std::string nvcc_output = outputs.of(nvcc, nvcc_key, "CUDA compiler", "KILN_NVCC");
  const std::string host_output = outputs.of(host_cxx, host_key, "host C++ compiler", "KILN_HOST_CXX");
  const std::string gpu_code_output = outputs.gpu_codes(nvcc, nvcc_key);
  outputs.remember();

  ToolchainIdentity identity;
  identity.nvcc_path = nvcc_key.real_path;
  identity.nvcc_version = lines_of(nvcc_output).back();
  identity.nvcc_release = release_of(nvcc_output);
  identity.host_cxx_path = host_key.real_path;
  identity.host_cxx_version = lines_of(host_output).front();
  identity.host_cxx_command = host_cxx;
  static const std::regex gpu_code(R"(^sm_(\d+)$)");
  for (const auto &line : lines_of(gpu_code_output)) {
    std::smatch match;
    if (std::regex_match(line, match, gpu_code)) identity.gpu_codes.push_back(std::stoi(match[1]));
  }
  memos[cache_file.string()] = Memo{nvcc_key, host_key, identity};
  return identity;
}

std::string find_cmake() {
  const std::string search_path = path_env();
  if (const auto explicit_cmake = env_value("KILN_CMAKE")) {
    const std::string found = find_executable(*explicit_cmake, search_path);
    if (!found.empty()) return found;
    throw ToolchainMissingError("KILN_CMAKE=" + *explicit_cmake +
                                " is not an executable file: point it at cmake (e.g. /usr/bin/cmake), or unset it "
                                "to search PATH");
  }
  const std::string found = find_executable("cmake", search_path);
  if (!found.empty()) return found;
  throw ToolchainMissingError("cmake not found; looked at:\n  KILN_CMAKE (unset)\n  cmake in PATH (" +
                              (search_path.empty() ? std::string("PATH empty") : search_path) +
                              ")\nInstall CMake (3.18 or newer), or set KILN_CMAKE to its path. Only building needs "
                              "it: a prepared artifact still loads on a machine without a toolchain.");
}

CmakeIdentity identify_cmake(const fs::path &cache_file) {
  const std::string cmake = find_cmake();
  const FileKey key = file_key_of(cmake);
  std::lock_guard<std::mutex> lock(memo_guard);
  const auto memo = cmake_memos.find(cache_file.string());
  if (memo != cmake_memos.end() && memo->second.first == key) return memo->second.second;
  VersionOutputs outputs(cache_file);
  const std::string output = outputs.of(cmake, key, "cmake", "KILN_CMAKE");
  outputs.remember();
  CmakeIdentity identity{key.real_path, lines_of(output).front()};
  cmake_memos[cache_file.string()] = {key, identity};
  return identity;
}

void reset_toolchain_memo_for_tests() {
  std::lock_guard<std::mutex> lock(memo_guard);
  memos.clear();
  cmake_memos.clear();
}

}  // namespace kiln::builder
