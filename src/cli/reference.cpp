#include "reference.hpp"

#include <algorithm>

#include <cuda.h>  // CUDA_VERSION: the toolkit kiln was built with

#include <kiln/version.hpp>

namespace kiln::cli {

const std::vector<ReferenceRow> &exit_codes() {
  static const std::vector<ReferenceRow> rows = {
      {"0", "ok"},
      {"1", "other: I/O (EACCES, EIO, with the path), driver"},
      {"2", "usage or bad name, bad KILN_DEVICE, a number out of range, an untrusted or unsigned bundle"},
      {"3", "not found: consumer, artifact, device index, file"},
      {"4", "incompatible: every differing field is listed"},
      {"5", "plugin ABI: not a kiln plugin, no common ABI version, a plugin breaking the unload rules"},
      {"6", "integrity: digest mismatch, damaged manifest or entry, unsafe permissions, tampered bundle"},
      {"7", "build failed"},
      {"8", "timeout: a swapped plugin's call did not return within its deadline (kiln swap)"}};
  return rows;
}

const std::vector<ReferenceRow> &environment() {
  static const std::vector<ReferenceRow> rows = {
      {"KILN_CACHE_DIR", "the writable store (else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln)"},
      {"KILN_STORE_PATH", "read-only store layers, colon-separated, searched before the cache"},
      {"KILN_DEVICE", "declared device, e.g. sm_87 or sm_87,integrated=1: checks and builds without a driver"},
      {"KILN_LIBCUDA", "the CUDA driver library to open instead of libcuda.so.1"},
      {"KILN_NVCC", "nvcc for builds on miss"},
      {"KILN_HOST_CXX", "host compiler for builds on miss"},
      {"KILN_JOBS", "parallel compiles of a build"},
      {"KILN_CMAKE", "cmake for \"backend\": \"cmake\" recipes (else cmake on PATH)"},
      {"KILN_ABI_DIR", "the plugin ABI include directory builds compile against"},
      {"KILN_REMOTE", "remote caches shared across machines (URL[;attr]|URL..., or off)"},
      {"KILN_REMOTE_TRUST", "public keys remote entries must be signed by, colon-separated"},
      {"KILN_REMOTE_SIGN", "the key uploads to remotes are signed with"},
      {"KILN_REMOTE_ACCEPT_UNSIGNED", "yes: take remote entries no trusted key signed (checked for damage only)"},
      {"KILN_CONFIG", "the config file (else <cache>/kiln.conf)"},
      {"KILN_NVRTC", "the NVRTC library to open, that path only"},
      {"KILN_NVJITLINK", "the nvJitLink library to open, that path only"},
      {"KILN_NVFATBIN", "the nvFatbin library to open, that path only"},
      {"KILN_DATA_DIR", "kiln robot init's templates and plugin sources (else the executable's ../share/kiln)"}};
  return rows;
}

const std::vector<ReferenceRow> &examples() {
  static const std::vector<ReferenceRow> rows = {
      {"doctor", "kiln doctor --json"},
      {"publish", "kiln publish --consumer my-ik --name iiwa14 --artifact libkiln_ik_iiwa14.so --arch sm_90"},
      {"load", "kiln load kiln-ik iiwa14 --device 0"},
      {"ls", "kiln ls kiln-ik"},
      {"show", "kiln show kiln-ik iiwa14"},
      {"build", "kiln build recipes/iiwa14.json --arch sm_90,sm_87"},
      {"ensure", "kiln ensure recipes/iiwa14.json --device 0"},
      {"swap", "kiln swap kiln-ik iiwa14 --wait 2000"},
      {"verify", "kiln verify --repair"},
      {"gc", "kiln gc --max-size 2G --older-than 30d"},
      {"keygen", "kiln keygen -o vendor"},
      {"key", "kiln key add fleet-keys.json --root root.key --key vendor.pub --role release"},
      {"export", "kiln export --consumer kiln-ik -o ik.kbundle --sign vendor.key"},
      {"import", "kiln import ik.kbundle --trust vendor.pub"},
      {"remote", "kiln remote push --consumer kiln-ik"},
      {"completion", "kiln completion bash > ~/.local/share/bash-completion/completions/kiln"},
      {"robot", "kiln robot init ur5.urdf --base base_link --tip tool0 --ik --trajopt 32 -o recipes"}};
  return rows;
}

std::string example_footer(const std::string &verb) {
  for (const auto &row : examples()) {
    if (verb == row.name) return std::string("Example:\n  ") + row.meaning;
  }
  return {};
}

namespace {

std::string table_text(const char *title, const std::vector<ReferenceRow> &rows) {
  std::size_t width = 0;
  for (const auto &row : rows) width = std::max(width, std::string(row.name).size());
  std::string text = std::string(title) + ":\n";
  for (const auto &row : rows) {
    const std::string name = row.name;
    text += "  " + name + std::string(width - name.size() + 2, ' ') + row.meaning + "\n";
  }
  return text;
}

}  // namespace

std::string help_footer() {
  return table_text("Exit codes", exit_codes()) + "\n" + table_text("Environment", environment()) +
         "\n`kiln VERB --help` describes a verb; docs/cli.md and kiln(1) have the details.";
}

nlohmann::json version_json() {
  nlohmann::json build = {{"type", KILN_BUILD_TYPE}, {"compiler", KILN_BUILD_COMPILER}, {"cuda_toolkit", CUDA_VERSION}};
  return {{"kiln", kVersion},
          {"abi", std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR)},
          {"key_schema", kKeySchema},
          {"artifact_schema", kArtifactSchema},
          {"build", build}};
}

}  // namespace kiln::cli
