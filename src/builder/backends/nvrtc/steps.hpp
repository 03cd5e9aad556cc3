// kiln internal: the steps of NvrtcToolchain::compile, one file each -- checking the request
// (request_checks.cpp), compiling NVRTC programs (compile.cpp), linking them per arch with
// nvJitLink (link.cpp) -- and what those steps share.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "builder/backends/nvrtc/libraries.hpp"
#include "builder/backends/nvrtc/toolchain.hpp"

namespace kiln::builder::jit {

// Refuses a malformed request (UsageError naming what is wrong and how to say it instead); for a
// well-formed one returns, per kernel of the request, the index of the source that defines it.
std::vector<std::size_t> check_request(const NvrtcRequest &request, const NvrtcToolchain::Impl &libraries);

// What NVRTC made of one (source, arch) program.
struct CompiledProgram {
  std::string bytes;  // cubin, PTX (no trailing NUL) or LTO-IR
  std::string log;
  std::vector<std::string> lowered;  // per kernel of this source, in request order (else empty)
  double ms = 0;
};

// Links, for each arch of the request, the programs its sources compiled to for that arch
// (programs[arch * sources + source]: relocatable cubins or LTO-IR) with nvJitLink, the archs in
// parallel; appends each arch's image, step and log to `result`, in request order.
void link_per_arch(const NvrtcToolchain::Impl &libraries, const NvrtcRequest &request,
                   const std::vector<CompiledProgram> &programs, JitResult *result);

// Runs fn(0..count-1) on up to `jobs` threads (0: one per hardware thread); stops handing out
// tasks after a failure; rethrows the failure of the lowest task index. Unlike
// builder::run_parallel (jobs.hpp), which rethrows whichever failed first, the error a request
// reports does not depend on thread timing.
template <class Fn>
void run_parallel(std::size_t count, unsigned jobs, Fn fn) {
  std::vector<std::exception_ptr> errors(count);
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  const auto worker = [&] {
    for (;;) {
      if (failed.load()) return;
      const std::size_t index = next.fetch_add(1);
      if (index >= count) return;
      try {
        fn(index);
      } catch (...) {
        errors[index] = std::current_exception();
        failed.store(true);
      }
    }
  };
  unsigned threads = jobs != 0 ? jobs : std::max(1u, std::thread::hardware_concurrency());
  threads = static_cast<unsigned>(std::min<std::size_t>(threads, count));
  if (threads <= 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(threads - 1);
    for (unsigned i = 1; i < threads; ++i) pool.emplace_back(worker);
    worker();
    for (auto &thread : pool) thread.join();
  }
  for (const auto &error : errors) {
    if (error) std::rethrow_exception(error);
  }
}

// The first line of a compiler or linker log that says "error", else its first non-empty line.
inline std::string first_error_line(const std::string &log) {
  std::string first;
  std::size_t start = 0;
  while (start < log.size()) {
    std::size_t end = log.find('\n', start);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(start, end - start);
    if (line.find("error") != std::string::npos) return line;
    if (first.empty() && line.find_first_not_of(" \t\r") != std::string::npos) first = line;
    start = end + 1;
  }
  return first;
}

// A log or PTX text as the libraries hand it out, without the terminating NULs.
inline std::string strip_nuls(std::string bytes) {
  while (!bytes.empty() && bytes.back() == '\0') bytes.pop_back();
  return bytes;
}

}  // namespace kiln::builder::jit
