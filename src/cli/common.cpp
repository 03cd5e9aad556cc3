#include "common.hpp"
#include "report_json.hpp"

#include <cstdio>
#include <iostream>

#include <kiln/kernels.hpp>
#include <kiln/remote.hpp>

namespace kiln::cli {
namespace {

std::string mib(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return text;
}

}  // namespace

Runtime make_runtime(const Flags &flags) {
  RuntimeOptions options = RuntimeOptions::from_environment();
  const int verbose = flags.verbose;
  options.log = [verbose](LogLevel level, const std::string &message) {
    if (level >= LogLevel::warning || (verbose > 0 && level >= LogLevel::info) || verbose > 1) {
      std::fprintf(stderr, "kiln: %s: %s\n", to_string(level), message.c_str());
    }
  };
  return Runtime(std::move(options));
}

void emit(const Flags &flags, const nlohmann::json &value, const std::string &text) {
  if (flags.json) {
    std::cout << json_text(value);
  } else {
    std::cout << text;
  }
}

std::string fixed(double value, int digits) {
  char text[32];
  std::snprintf(text, sizeof text, "%.*f", digits, value);
  return text;
}

std::string arch_list(const std::vector<Arch> &archs) {
  std::string text;
  for (const auto &arch : archs) text += (text.empty() ? "" : ",") + arch.to_string();
  return text;
}

std::string device_line(const DeviceIdentity &d) {
  return "  [" + std::to_string(d.ordinal) + "] " + d.name + "  " + d.arch_name() + (d.integrated ? " (integrated)" : "") +
         (d.declared ? " (declared)" : "") + (d.uuid.empty() ? "" : "  " + d.uuid) +
         (d.sm_count > 0 ? "  SMs " + std::to_string(d.sm_count) : "") +
         (d.total_memory > 0 ? "  " + mib(d.total_memory) : "") + "  driver " + std::to_string(d.driver_version) + "\n";
}

std::string image_text(const ArtifactImage &image) {
  std::string text = image.file + " (" + image.kind + " ";
  if (image.kind == "fatbin") {
    text += "[" + arch_list(image.contains) + "]";
  } else {
    text += image.arch.to_string();
  }
  return text + ", " + std::to_string(image.size) + " bytes)";
}

std::string kernels_text(const Resolution &resolution) {
  std::string text;
  for (const auto &kernel : resolution.kernels) {
    text += std::string(text.empty() ? "  kernels  " : "           ") + kernel.name +
            (kernel.lowered_name != kernel.name ? "  (" + kernel.lowered_name + ")" : "") + "\n";
  }
  return text;
}

std::string kernel_load_text(const std::string &verb, const KernelLoadReport &report) {
  const Resolution &r = report.resolution;
  std::string text = verb + " " + r.consumer + "/" + r.name + " (device images, " + std::to_string(r.images.size()) +
                     " image(s), " + std::to_string(r.kernels.size()) + " kernel(s), " + r.content_key + ")\n";
  text += "  entry    " + r.entry_dir + "\n";
  text += kernels_text(r);
  for (const auto &load : report.loads) {
    text += "  device " + std::to_string(load.device.ordinal) + " " + load.device.name + " " + load.device.arch_name() +
            ": " + image_text(load.image) + ": " + load.choice.how + "\n";
  }
  for (const auto &skipped : report.skipped) text += "  skipped " + skipped.device + ": " + skipped.why + "\n";
  const KernelLoadTimings &t = report.timings;
  text += "  timings (ms): resolve " + fixed(t.resolve_ms) + ", check " + fixed(t.check_ms) + ", verify " +
          fixed(t.verify_ms) + ", load " + fixed(t.load_ms) + ", kernels " + fixed(t.kernels_ms) + ", total " +
          fixed(t.total_ms()) + "\n";
  return text;
}

std::string remote_status_text(const RemoteStatus &status, const std::string &indent) {
  std::string text = indent + "config       " + (status.config_file.empty() ? std::string("(none)") : status.config_file) + "\n";
  if (status.remotes.empty()) text += indent + "remotes      none (set KILN_REMOTE or `remote = URL` in kiln.conf)\n";
  for (const auto &remote : status.remotes) {
    text += indent + "remote       " + remote.url + (remote.read_only ? " (read-only)" : " (read-write)") + ": " +
            remote.state + " -- " + remote.detail +
            (remote.state == "skipped" ? "" : ", " + fixed(remote.round_trip_ms, 1) + " ms") + "\n";
  }
  for (const auto &key : status.trusted_keys) text += indent + "trusted key  " + key + "\n";
  if (status.trusted_keys.empty() && !status.remotes.empty()) {
    text += indent + (status.accept_unsigned
                          ? "trusted key  none, accept-unsigned: remote entries are checked for damage only, not for who signed them\n"
                          : "trusted key  none: entries are taken only where the store pins a fleet root (kiln key list)\n");
  }
  if (!status.remotes.empty()) {
    text += indent + "signing key  " +
            (status.signing_key.empty() ? std::string("none: remotes are only read, unless a spec says read-write")
                                        : status.signing_key) +
            "\n";
    text += indent + "entries      valid " + std::to_string(status.entry_lifetime_s / 86400) + " days (" +
            std::to_string(status.entry_lifetime_s) + " s) from their upload (entry-lifetime)\n";
  }
  return text;
}

}  // namespace kiln::cli
