// kiln internal: NvrtcToolchain::compile -- the request's NVRTC programs, one per (source, arch),
// compiled in parallel, then linked per arch when the request needs it (link.cpp).
#include "builder/backends/nvrtc/steps.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include <kiln/errors.hpp>

#include "support/elapsed.hpp"
#include "support/text.hpp"

namespace kiln::builder {
namespace {

using jit::CompiledProgram;
using jit::first_error_line;
using jit::NvrtcResult;

// NVRTC_ERROR_INVALID_OPTION (nvrtc.h): an option nvrtcCompileProgram does not take.
constexpr NvrtcResult kNvrtcInvalidOption = 5;
using jit::strip_nuls;
using support::joined;
using support::ms_since;
using NvrtcProgram = jit::OwnedHandle<jit::nvrtcProgram, NvrtcResult>;

enum class Mode { direct, lto, rdc };

struct CompileTask {
  std::size_t source = 0;
  std::size_t arch = 0;
  Mode mode = Mode::direct;
};

}  // namespace

JitResult NvrtcToolchain::compile(const NvrtcRequest &request) const {
  const auto started = std::chrono::steady_clock::now();
  const Impl &d = *impl_;
  if (!d.nvrtc.found) throw ToolchainMissingError("cannot JIT-compile: " + d.nvrtc.detail);

  const std::vector<std::size_t> kernel_source = jit::check_request(request, d);

  const bool linked = request.lto || request.sources.size() > 1;
  if (linked && !d.nvjitlink.found) {
    throw NotFoundError(std::string("cannot link the JIT build (") +
                        (request.lto ? "LTO was asked for" : "it has several sources") + "): " +
                        d.nvjitlink.detail);
  }

  // --- Compile every (source, arch). ---
  std::vector<CompileTask> tasks;
  for (std::size_t a = 0; a < request.archs.size(); ++a) {
    const bool ptx_target = request.archs[a].kind == Arch::Kind::ptx;
    Mode mode = Mode::direct;
    if (linked) mode = (request.lto || ptx_target) ? Mode::lto : Mode::rdc;
    for (std::size_t s = 0; s < request.sources.size(); ++s) tasks.push_back({s, a, mode});
  }

  std::vector<const char *> header_bytes, header_names_c;
  for (const auto &header : request.headers) {
    header_bytes.push_back(header.bytes.c_str());
    header_names_c.push_back(header.include_name.c_str());
  }

  std::vector<CompiledProgram> outputs(tasks.size());
  jit::run_parallel(tasks.size(), request.jobs, [&](std::size_t index) {
    const auto task_started = std::chrono::steady_clock::now();
    const CompileTask &task = tasks[index];
    const NvrtcSource &source = request.sources[task.source];
    const Arch &arch = request.archs[task.arch];
    CompiledProgram &out = outputs[index];

    std::vector<std::string> options;
    options.push_back("-arch=" + arch.to_string());
    if (task.mode == Mode::lto) options.emplace_back("-dlto");
    if (task.mode == Mode::rdc) options.emplace_back("-rdc=true");
    for (const auto &define : request.defines) options.push_back("-D" + define);
    for (const auto &option : request.options) options.push_back(option);
    std::vector<const char *> option_ptrs;
    for (const auto &option : options) option_ptrs.push_back(option.c_str());

    const std::string where = source.name + " for " + arch.to_string();
    NvrtcProgram program{d.rtc.destroy_program};
    NvrtcResult result = d.rtc.create_program(
        &program.handle, source.bytes.c_str(), source.name.c_str(),
        static_cast<int>(header_bytes.size()), header_bytes.empty() ? nullptr : header_bytes.data(),
        header_names_c.empty() ? nullptr : header_names_c.data());
    if (result != 0) {
      throw BuildError("NVRTC could not create a program for " + where + ": " + d.nvrtc_error(result), "");
    }
    for (std::size_t k = 0; k < request.kernels.size(); ++k) {
      if (kernel_source[k] != task.source) continue;
      result = d.rtc.add_name_expression(program.handle, request.kernels[k].name.c_str());
      if (result != 0) {
        throw BuildError("NVRTC refused kernel name \"" + request.kernels[k].name + "\" for " +
                             where + ": " + d.nvrtc_error(result), "");
      }
    }
    const NvrtcResult compiled = d.rtc.compile_program(
        program.handle, static_cast<int>(option_ptrs.size()), option_ptrs.data());
    std::size_t log_size = 0;
    if (d.rtc.get_program_log_size(program.handle, &log_size) == 0 && log_size > 1) {
      out.log.resize(log_size);
      if (d.rtc.get_program_log(program.handle, &out.log[0]) != 0) out.log.clear();
      out.log = strip_nuls(std::move(out.log));
    }
    if (compiled == kNvrtcInvalidOption) {  // an option of the recipe's: the recipe is to fix
      const std::string line = first_error_line(out.log);
      throw UsageError("NVRTC rejected an option compiling " + where + ": " +
                       (line.empty() ? d.nvrtc_error(compiled) : line) + " (options: " + joined(options, " ") +
                       "); fix \"flags\" (NVRTC takes nvrtc options, not nvcc ones: see NVRTC's \"Supported Compile Options\")");
    }
    if (compiled != 0) {
      const std::string line = first_error_line(out.log);
      throw BuildError("NVRTC could not compile " + where + ": " +
                           (line.empty() ? d.nvrtc_error(compiled) : line) +
                           " (options: " + joined(options, " ") + ")",
                       out.log.empty() ? d.nvrtc_error(compiled) : out.log);
    }

    // The output.
    std::size_t size = 0;
    const char *what = "";
    if (task.mode == Mode::lto) {
      what = "LTO-IR";
      result = d.rtc.get_ltoir_size(program.handle, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_ltoir(program.handle, &out.bytes[0]);
      }
    } else if (arch.kind == Arch::Kind::sass) {
      what = "cubin";
      result = d.rtc.get_cubin_size(program.handle, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_cubin(program.handle, &out.bytes[0]);
      }
    } else {
      what = "PTX";
      result = d.rtc.get_ptx_size(program.handle, &size);
      if (result == 0) {
        out.bytes.resize(size);
        result = d.rtc.get_ptx(program.handle, &out.bytes[0]);
        out.bytes = strip_nuls(std::move(out.bytes));
      }
    }
    if (result != 0 || out.bytes.empty()) {
      throw BuildError("NVRTC produced no " + std::string(what) + " for " + where + ": " +
                           (result != 0 ? d.nvrtc_error(result) : std::string("empty output")),
                       out.log);
    }

    // Lowered names (the same for every arch; taken from each program, used from the first).
    for (std::size_t k = 0; k < request.kernels.size(); ++k) {
      if (kernel_source[k] != task.source) continue;
      const char *lowered = nullptr;
      result = d.rtc.get_lowered_name(program.handle, request.kernels[k].name.c_str(), &lowered);
      if (result != 0 || lowered == nullptr) {
        throw BuildError("NVRTC has no lowered name for kernel \"" + request.kernels[k].name +
                             "\" in " + where + ": " + d.nvrtc_error(result) +
                             "; is it a __global__ function defined in " + source.name + "?",
                         out.log);
      }
      out.lowered.emplace_back(lowered);
    }
    out.ms = ms_since(task_started);
  });

  JitResult result;
  result.nvrtc_version = d.nvrtc.version;
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    const auto &task = tasks[i];
    const std::string label = request.sources[task.source].name + " " +
                              request.archs[task.arch].to_string();
    result.steps.push_back({"nvrtc " + label, outputs[i].ms});
    if (!outputs[i].log.empty()) result.log += "== nvrtc " + label + " ==\n" + outputs[i].log + "\n";
  }
  // Kernel names from the first arch's programs.
  for (std::size_t k = 0; k < request.kernels.size(); ++k) {
    std::size_t rank = 0;  // position of kernel k among its source's kernels
    for (std::size_t j = 0; j < k; ++j) rank += kernel_source[j] == kernel_source[k] ? 1 : 0;
    const auto &lowered = outputs[kernel_source[k]].lowered;  // tasks[s] is (source s, arch 0)
    result.kernels.push_back({request.kernels[k].name, lowered.at(rank)});
  }

  if (!linked) {
    for (std::size_t a = 0; a < request.archs.size(); ++a) {
      DeviceImage image;
      image.arch = request.archs[a];
      image.kind = image.arch.kind == Arch::Kind::sass ? "cubin" : "ptx";
      image.bytes = std::move(outputs[a].bytes);  // one source: task index == arch index
      result.images.push_back(std::move(image));
    }
    result.total_ms = ms_since(started);
    return result;
  }

  // --- Link per arch with nvJitLink. ---
  jit::link_per_arch(d, request, outputs, &result);
  result.total_ms = ms_since(started);
  return result;
}

std::vector<std::string> JitResult::lowered_names() const {
  std::vector<std::string> names;
  for (const auto &kernel : kernels) names.push_back(kernel.lowered_name);
  return names;
}

KernelImages JitResult::kernel_images(std::string label) const {
  KernelImages set;
  set.images = images;
  set.kernels = lowered_names();
  for (const auto &kernel : kernels) set.name_expressions.push_back(kernel.name);
  set.cuda_toolkit_version = nvrtc_version;
  set.label = std::move(label);
  return set;
}

JitResult compile(const NvrtcRequest &request) { return NvrtcToolchain::instance().compile(request); }

}  // namespace kiln::builder
