// kiln internal: the checks a JIT request passes before anything is compiled: names, archs
// the NVRTC at hand supports, defines, options that would escape the content key, and kernels.
#include "builder/backends/nvrtc/steps.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <kiln/errors.hpp>

#include "support/text.hpp"

namespace kiln::builder::jit {
namespace {

using support::joined;
using support::starts_with;

// Options kiln sets itself or that would make the build read files the content key misses.
void check_option(const std::string &option) {
  struct Refused {
    const char *prefix;
    const char *why;
  };
  static const Refused refused[] = {
      {"-I", "headers are given by content (NvrtcRequest::headers), never from include directories"},
      {"--include-path", "headers are given by content (NvrtcRequest::headers), never from include directories"},
      {"-include", "headers are given by content (NvrtcRequest::headers); #include them from a source"},
      {"--pre-include", "headers are given by content (NvrtcRequest::headers); #include them from a source"},
      {"-arch", "target archs are NvrtcRequest::archs"},
      {"--gpu-architecture", "target archs are NvrtcRequest::archs"},
      {"-dlto", "set NvrtcRequest::lto"},
      {"--dlink-time-opt", "set NvrtcRequest::lto"},
      {"-rdc", "relocatable code is used when several sources are linked; set NvrtcRequest::lto to link with LTO"},
      {"--relocatable-device-code", "relocatable code is used when several sources are linked"},
      {"-pch", "precompiled headers read and write files outside the store"},
      {"--pch", "precompiled headers read and write files outside the store"},
      {"-create-pch", "precompiled headers read and write files outside the store"},
      {"--create-pch", "precompiled headers read and write files outside the store"},
      {"-use-pch", "precompiled headers read and write files outside the store"},
      {"--use-pch", "precompiled headers read and write files outside the store"},
      {"-time", "it writes a file outside the store"},
      {"--time", "it writes a file outside the store"},
      {"-fdevice-time-trace", "it writes a file outside the store"},
      {"--fdevice-time-trace", "it writes a file outside the store"},
  };
  for (const auto &rule : refused) {
    const std::string_view prefix = rule.prefix;
    if (!starts_with(option, prefix)) continue;
    // "-I..." and "-arch..." are prefixes; the others must end there or continue with '='.
    const bool prefix_form = prefix == "-I" || prefix == "-arch";
    if (prefix_form || option.size() == prefix.size() || option[prefix.size()] == '=') {
      throw UsageError("JIT option \"" + option + "\" is refused: " + rule.why);
    }
  }
}

void check_define(const std::string &define) {
  const std::string name = define.substr(0, define.find('='));
  const bool bad = name.empty() || name.front() == '-' ||
                   name.find_first_of(" \t\r\n") != std::string::npos ||
                   (name.front() >= '0' && name.front() <= '9');
  if (bad) {
    throw UsageError("JIT define \"" + define + "\" is malformed: expected NAME or NAME=VALUE with "
                     "NAME an identifier (or a function-like macro NAME(args))");
  }
}

void check_names(const NvrtcRequest &request) {
  if (request.sources.empty()) throw UsageError("JIT request has no source");
  std::set<std::string> source_names;
  for (const auto &source : request.sources) {
    if (source.name.empty()) throw UsageError("JIT request has a source without a name");
    if (!source_names.insert(source.name).second) {
      throw UsageError("JIT request names source \"" + source.name + "\" twice");
    }
  }
  std::set<std::string> header_names;
  for (const auto &header : request.headers) {
    if (header.include_name.empty()) throw UsageError("JIT request has a header without an include name");
    if (!header_names.insert(header.include_name).second) {
      throw UsageError("JIT request names header \"" + header.include_name + "\" twice");
    }
  }
}

void check_archs(const NvrtcRequest &request, const NvrtcToolchain::Impl &libraries) {
  const std::vector<int> &supported = libraries.supported;
  if (request.archs.empty()) {
    throw UsageError("JIT request has no target arch: give sm_XY for a cubin, compute_XY for PTX");
  }
  for (std::size_t i = 0; i < request.archs.size(); ++i) {
    const Arch &arch = request.archs[i];
    for (std::size_t j = 0; j < i; ++j) {
      if (request.archs[j] == arch) {
        throw UsageError("JIT request lists arch " + arch.to_string() + " twice");
      }
    }
    if (!supported.empty() && std::find(supported.begin(), supported.end(), arch.cc()) == supported.end()) {
      std::vector<std::string> names;
      for (int cc : supported) names.push_back("sm_" + std::to_string(cc));
      throw UsageError("NVRTC " + libraries.nvrtc.version_text() + " cannot compile for " +
                       arch.to_string() + "; it supports " + joined(names, ", "));
    }
  }
}

// kernel index -> defining source index
std::vector<std::size_t> defining_sources(const NvrtcRequest &request) {
  std::vector<std::size_t> kernel_source(request.kernels.size(), 0);
  for (std::size_t k = 0; k < request.kernels.size(); ++k) {
    const auto &kernel = request.kernels[k];
    if (kernel.name.empty()) throw UsageError("JIT request has an empty kernel name");
    if (kernel.source.empty()) {
      if (request.sources.size() > 1) {
        throw UsageError("JIT kernel \"" + kernel.name + "\": name the source that defines it "
                         "(NvrtcKernel{name, source}); the request has several sources");
      }
      continue;
    }
    const auto found = std::find_if(request.sources.begin(), request.sources.end(),
                                    [&](const NvrtcSource &s) { return s.name == kernel.source; });
    if (found == request.sources.end()) {
      throw UsageError("JIT kernel \"" + kernel.name + "\" names source \"" + kernel.source +
                       "\", which the request does not have");
    }
    kernel_source[k] = static_cast<std::size_t>(found - request.sources.begin());
  }
  return kernel_source;
}

}  // namespace

std::vector<std::size_t> check_request(const NvrtcRequest &request, const NvrtcToolchain::Impl &libraries) {
  check_names(request);
  check_archs(request, libraries);
  for (const auto &define : request.defines) check_define(define);
  for (const auto &option : request.options) check_option(option);
  return defining_sources(request);
}

}  // namespace kiln::builder::jit
