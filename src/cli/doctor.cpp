// kiln doctor: driver, devices, declared device, stores (the writable cache tried), build
// toolchain and remote caches (each asked for a round trip). A cache that cannot take a file, a
// remote that does not answer or a malformed remote configuration is reported (a robot may load
// from read-only layers only, and loads never ask a remote), not an error.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <kiln/json.hpp>
#include <kiln/remote.hpp>
#include <kiln/store.hpp>
#include <kiln/toolchain.hpp>
#include <kiln/version.hpp>

#include "report_json.hpp"
#include "verbs.hpp"

namespace kiln::cli {
namespace {

using nlohmann::json;

std::string tool_line(const char *name, const ToolStatus &tool, const std::string &when_missing) {
  std::string text = std::string("  ") + name + ": ";
  if (!tool.found) return text + "not found" + when_missing + ": " + tool.detail + "\n";
  text += tool.path;
  if (!tool.version.empty()) text += "  " + tool.version;
  if (!tool.release.empty()) text += " (" + tool.release + ")";
  if (tool.version.empty() && !tool.detail.empty()) text += "  does not run: " + tool.detail;
  return text + "\n";
}

// Whether the writable cache takes a file now: one created and removed in it (where it does not
// exist yet, its nearest existing parent must let kiln create it). Read-only file systems,
// permissions and full disks show here instead of at the first build.
json cache_writable(const std::string &root) {
  namespace fs = std::filesystem;
  std::error_code error;
  fs::path dir = root;
  while (!dir.empty() && !fs::exists(dir, error)) dir = dir.parent_path();
  const bool exists = dir == fs::path(root);
  std::string probe = (dir.empty() ? fs::path(".") : dir).string() + "/.kiln-doctor-XXXXXX";
  const int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    const int why = errno;
    return {{"writable", false}, {"exists", exists},
            {"detail", "cannot create a file in " + (dir.empty() ? std::string(".") : dir.string()) + ": " +
                           std::strerror(why) + "; set KILN_CACHE_DIR to a writable directory"}};
  }
  const bool wrote = ::write(fd, "k", 1) == 1;
  const int why = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) {
    return {{"writable", false}, {"exists", exists},
            {"detail", "cannot write to " + dir.string() + ": " + std::strerror(why) + " (a full disk?)"}};
  }
  return {{"writable", true}, {"exists", exists},
          {"detail", exists ? "writable" : "does not exist yet; " + dir.string() + " lets kiln create it"}};
}

// The remote caches as `kiln remote status` reports them; a configuration builds would refuse
// (malformed, others-writable, the backends' module missing) is shown with its error instead.
void remote_report(const Runtime &runtime, json &out, std::string &text) {
  try {
    const RemoteStatus status = runtime.remote_status();
    out = kiln::to_json(status);
    text = "remote caches:\n" + remote_status_text(status, "  ");
  } catch (const Error &error) {
    out = {{"error", error_json(error)}};
    text = std::string("remote caches: ") + error.what() + " (builds refuse to start until this is fixed; loads never read it)\n";
  }
}

int doctor(const Flags &flags) {
  Runtime runtime = make_runtime(flags);
  const DeviceReport &devices = runtime.devices();
  const ToolchainReport toolchain = runtime.toolchain();
  json stores = json::array();
  std::string cache_line;
  for (const auto &store : runtime.stores()) {
    stores.push_back(kiln::to_json(store));
    if (!store.writable) continue;
    const json check = cache_writable(store.root);
    stores.back()["check"] = check;
    cache_line = "writable cache " + store.root + ": " + check["detail"].get<std::string>() +
                 (check["writable"].get<bool>() ? "" : " (builds and publishes fail; loads from the layers still work)") + "\n";
  }
  json remotes;
  std::string remote_text;
  remote_report(runtime, remotes, remote_text);
  const std::string abi = std::to_string(KILN_ABI_VERSION_MAJOR) + "." + std::to_string(KILN_ABI_VERSION_MINOR);
  const json out = {{"kiln_version", kVersion},
                    {"abi_version", abi},
                    {"driver", kiln::to_json(devices)},
                    {"stores", stores},
                    {"toolchain", kiln::to_json(toolchain)},
                    {"remotes", remotes}};
  std::string text = "kiln " + std::string(kVersion) + " (plugin ABI " + abi + ")\n";
  text += "driver: " + std::string(kiln::to_string(devices.state)) + " - " + devices.detail + "\n";
  for (const auto &device : devices.devices) text += device_line(device);
  if (devices.declared) text += "declared device (KILN_DEVICE):\n" + device_line(*devices.declared);
  text += "stores (searched in order):\n";
  for (const auto &store : runtime.stores()) {
    text += "  " + store.root + (store.writable ? "  (writable cache" : "  (read-only layer") + ", from " + store.origin + ")\n";
  }
  text += cache_line;
  text += "toolchain:\n";
  text += tool_line("nvcc", toolchain.nvcc, " (prepared artifacts still load)");
  if (toolchain.nvcc.found) text += tool_line("host compiler", toolchain.host_compiler, "");
  text += tool_line("cmake", toolchain.cmake, " (cmake recipes; prepared artifacts still load)");
  text += tool_line("nvrtc", toolchain.nvrtc, "");
  text += tool_line("nvjitlink", toolchain.nvjitlink, "");
  text += tool_line("nvfatbin", toolchain.nvfatbin, "");
  text += remote_text;
  emit(flags, out, text);
  return 0;
}

}  // namespace

Verb add_doctor(CLI::App &app, const Flags &flags) {
  CLI::App *command = app.add_subcommand("doctor", "driver, devices, declared device, stores and toolchain");
  return {command, [&flags] { return doctor(flags); }};
}

}  // namespace kiln::cli
