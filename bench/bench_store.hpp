// The store a bench builds into and loads from: --cache DIR when given (kept), else a temporary
// one removed when the bench ends; kiln's warnings and errors go to stderr.
#pragma once

#include <cstdio>
#include <string>

#include <boost/filesystem/operations.hpp>

#include <kiln/log.hpp>
#include <kiln/runtime.hpp>

namespace kiln_bench {

class BenchStore {
 public:
  // prefix names the temporary directory ("kiln-bench-swap").
  BenchStore(const std::string &cache, const std::string &prefix)
      : options(kiln::RuntimeOptions::from_environment()) {
    options.log = [](kiln::LogLevel level, const std::string &text) {
      if (level >= kiln::LogLevel::warning) std::fprintf(stderr, "kiln: %s: %s\n", kiln::to_string(level), text.c_str());
    };
    if (!cache.empty()) {
      options.cache_dir = cache;
    } else {
      temp_ = boost::filesystem::temp_directory_path() / boost::filesystem::unique_path(prefix + "-%%%%%%%%");
      options.cache_dir = temp_.string();
    }
  }
  BenchStore(const BenchStore &) = delete;
  BenchStore &operator=(const BenchStore &) = delete;
  ~BenchStore() {
    boost::system::error_code ignored;
    if (!temp_.empty()) boost::filesystem::remove_all(temp_, ignored);
  }

  kiln::RuntimeOptions options;

 private:
  boost::filesystem::path temp_;
};

// A plugin file built elsewhere, published into the runtime's store as bench/<name> and loaded.
inline kiln::Module publish_and_load(kiln::Runtime &runtime, const std::string &name, const std::string &file) {
  kiln::PublishRequest request;
  request.consumer = "bench";
  request.name = name;
  request.artifact_file = file;
  runtime.publish(request);
  return runtime.load("bench", name);
}

// Whether this process can run on a CUDA device: a driver and a device, not one declared
// (KILN_DEVICE), which plans and builds but runs nothing.
inline bool live_gpu(kiln::Runtime &runtime) {
  const kiln::DeviceReport &devices = runtime.devices();
  return devices.state == kiln::DriverState::ok && !devices.devices.empty() && !devices.declared;
}

}  // namespace kiln_bench
