// Runtime::toolchain: what the build backends find here, for `kiln doctor` and hosts.
#include <kiln/runtime.hpp>
#include <kiln/toolchain.hpp>

#include <boost/filesystem/path.hpp>

#include "builder/backends/nvrtc/toolchain.hpp"
#include "builder/toolchain.hpp"

namespace kiln {
namespace {

ToolStatus library_status(const builder::NvrtcLibraryStatus &library) {
  ToolStatus status;
  status.found = library.found;
  status.path = library.path;
  status.version = library.version_text();
  status.searched = library.searched;
  status.detail = library.detail;
  return status;
}

// Where `find` leads, or why nowhere.
template <class Find>
void locate(ToolStatus &status, Find find) {
  try {
    status.path = find();
    status.found = true;
  } catch (const Error &error) {
    status.detail = error.what();
  }
}

}  // namespace

ToolchainReport Runtime::toolchain() const {
  ToolchainReport report;
  locate(report.nvcc, builder::find_nvcc);
  locate(report.host_compiler, builder::find_host_compiler);
  if (report.nvcc.found && report.host_compiler.found) {
    try {
      const builder::ToolchainIdentity identity = builder::identify_toolchain(boost::filesystem::path());  // memo only
      report.nvcc.version = identity.nvcc_version;
      report.nvcc.release = identity.nvcc_release;
      report.host_compiler.version = identity.host_cxx_version;
    } catch (const Error &error) {  // found, but a --version run failed: the error names which
      report.nvcc.detail = error.what();
      report.host_compiler.detail = error.what();
    }
  }
  locate(report.cmake, builder::find_cmake);
  if (report.cmake.found) {
    try {
      report.cmake.version = builder::identify_cmake(boost::filesystem::path()).version;  // memo only
    } catch (const Error &error) {
      report.cmake.detail = error.what();
    }
  }
  const builder::NvrtcToolchain &jit = builder::NvrtcToolchain::instance();
  report.nvrtc = library_status(jit.nvrtc());
  report.nvjitlink = library_status(jit.nvjitlink());
  report.nvfatbin = library_status(jit.nvfatbin());
  report.nvrtc_archs = jit.supported_archs();
  report.jit_identity = jit.identity();
  return report;
}

}  // namespace kiln
