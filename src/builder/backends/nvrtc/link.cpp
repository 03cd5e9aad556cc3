// kiln internal: linking a JIT build per arch with nvJitLink (relocatable cubins, or LTO-IR).
#include "builder/backends/nvrtc/steps.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>

#include "support/elapsed.hpp"
#include "support/text.hpp"

namespace kiln::builder::jit {
namespace {

using support::joined;
using support::ms_since;

// nvJitLink's arch name for an image: sm_XY[a|f] (PTX targets link for the same sm).
std::string sm_name(const Arch &arch) {
  Arch sass = arch;
  sass.kind = Arch::Kind::sass;
  return sass.to_string();
}

}  // namespace

void link_per_arch(const NvrtcToolchain::Impl &libraries, const NvrtcRequest &request,
                   const std::vector<CompiledProgram> &programs, JitResult *result) {
  const NvJitLinkApi &api = libraries.link;
  result->nvjitlink_version = libraries.nvjitlink.version;
  struct LinkOutput {
    DeviceImage image;
    std::string log;
    double ms = 0;
  };
  std::vector<LinkOutput> links(request.archs.size());
  run_parallel(request.archs.size(), request.jobs, [&](std::size_t a) {
    const auto link_started = std::chrono::steady_clock::now();
    const Arch &arch = request.archs[a];
    const bool ptx_target = arch.kind == Arch::Kind::ptx;
    const bool lto = request.lto || ptx_target;
    std::vector<std::string> options = {"-arch=" + sm_name(arch)};
    if (lto) options.emplace_back("-lto");
    if (ptx_target) options.emplace_back("-ptx");
    for (const auto &option : request.link_options) options.push_back(option);
    std::vector<const char *> option_ptrs;
    for (const auto &option : options) option_ptrs.push_back(option.c_str());

    LinkOutput &out = links[a];
    OwnedHandle<nvJitLinkHandle, NvJitLinkResult> link{api.destroy};
    const auto logs = [&] {
      std::string text;
      std::size_t size = 0;
      if (link.handle != nullptr && api.get_error_log_size(link.handle, &size) == 0 && size > 1) {
        std::string part(size, '\0');
        if (api.get_error_log(link.handle, &part[0]) == 0) text += strip_nuls(part);
      }
      if (link.handle != nullptr && api.get_info_log_size(link.handle, &size) == 0 && size > 1) {
        std::string part(size, '\0');
        if (api.get_info_log(link.handle, &part[0]) == 0) {
          if (!text.empty() && text.back() != '\n') text += '\n';
          text += strip_nuls(part);
        }
      }
      return text;
    };
    const std::string where = "nvJitLink for " + arch.to_string() + " (" + joined(options, " ") + ")";
    NvJitLinkResult status =
        api.create(&link.handle, static_cast<std::uint32_t>(option_ptrs.size()), option_ptrs.data());
    if (status != 0) {
      throw BuildError(where + " could not start: nvJitLink error " + std::to_string(status), logs());
    }
    for (std::size_t s = 0; s < request.sources.size(); ++s) {
      const std::string &bytes = programs[a * request.sources.size() + s].bytes;
      status = api.add_data(link.handle, lto ? kNvJitLinkInputLtoir : kNvJitLinkInputCubin,
                            bytes.data(), bytes.size(), request.sources[s].name.c_str());
      if (status != 0) {
        const std::string log = logs();
        throw BuildError(where + " refused the code of " + request.sources[s].name +
                             ": nvJitLink error " + std::to_string(status) +
                             (log.empty() ? "" : ": " + first_error_line(log)),
                         log);
      }
    }
    status = api.complete(link.handle);
    out.log = logs();
    if (status != 0) {
      throw BuildError(where + " failed: nvJitLink error " + std::to_string(status) +
                           (out.log.empty() ? "" : ": " + first_error_line(out.log)),
                       out.log);
    }
    std::size_t size = 0;
    out.image.arch = arch;
    if (ptx_target) {
      out.image.kind = "ptx";
      status = api.get_linked_ptx_size(link.handle, &size);
      if (status == 0) {
        out.image.bytes.resize(size);
        status = api.get_linked_ptx(link.handle, &out.image.bytes[0]);
        out.image.bytes = strip_nuls(std::move(out.image.bytes));
      }
    } else {
      out.image.kind = "cubin";
      status = api.get_linked_cubin_size(link.handle, &size);
      if (status == 0) {
        out.image.bytes.resize(size);
        status = api.get_linked_cubin(link.handle, &out.image.bytes[0]);
      }
    }
    if (status != 0 || out.image.bytes.empty()) {
      throw BuildError(where + " produced no " + out.image.kind + ": nvJitLink error " +
                           std::to_string(status), out.log);
    }
    out.ms = ms_since(link_started);
  });
  for (std::size_t a = 0; a < links.size(); ++a) {
    const std::string label = request.archs[a].to_string();
    result->steps.push_back({"nvJitLink " + label, links[a].ms});
    if (!links[a].log.empty()) result->log += "== nvJitLink " + label + " ==\n" + links[a].log + "\n";
    result->images.push_back(std::move(links[a].image));
  }
}

}  // namespace kiln::builder::jit
