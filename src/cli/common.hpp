// What every verb of the kiln CLI shares: the global flags, the Runtime it builds, output.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <kiln/kernels.hpp>
#include <kiln/remote.hpp>
#include <kiln/runtime.hpp>

namespace kiln::cli {

struct Flags {
  bool json = false;
  int verbose = 0;
};

// A verb: its subcommand (options bound) and what runs it once parsed; returns the exit code.
struct Verb {
  CLI::App *command = nullptr;
  std::function<int()> run;
};

// A Runtime from the environment that logs to stderr: warnings always, info with -v, debug with -vv.
Runtime make_runtime(const Flags &flags);

// Prints `value` (with --json) or `text` on stdout.
void emit(const Flags &flags, const nlohmann::json &value, const std::string &text);

std::string fixed(double value, int digits = 3);
std::string arch_list(const std::vector<Arch> &archs);  // "sm_90,compute_90"
std::string device_line(const DeviceIdentity &device);
std::string image_text(const ArtifactImage &image);
std::string kernels_text(const Resolution &resolution);
// The configuration and each remote cache's answer, a line each, every line prefixed by `indent`
// (kiln remote status, kiln doctor).
std::string remote_status_text(const RemoteStatus &status, const std::string &indent = "");
// "loaded"/"ensured" consumer/name of a device-image artifact: entry, kernels, per device, timings.
std::string kernel_load_text(const std::string &verb, const KernelLoadReport &report);

}  // namespace kiln::cli
