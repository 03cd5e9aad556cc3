// Helpers for the plugin-boundary and solver plugin tests: a Runtime over a temporary store,
// publishing a test plugin into it (and loading it), the message of an expected error, and a log
// that collects what it is told.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/filesystem/operations.hpp>

#include <kiln/ext/example.h>
#include <kiln/runtime.hpp>

#include "support/fixtures.hpp"

namespace kiln::test {

inline RuntimeOptions store_options(const TempDir &dir, std::optional<std::string> device = std::string("sm_90")) {
  RuntimeOptions options;
  options.cache_dir = (dir / "cache").string();
  options.declared_device = std::move(device);
  return options;
}

inline PublishResult publish_plugin(Runtime &runtime, const std::string &file, const std::string &name = "example",
                                    const std::string &archs = "") {
  PublishRequest request;
  request.consumer = "tests";
  request.name = name;
  request.artifact_file = file;
  if (!archs.empty()) request.archs = Arch::parse_list(archs);
  return runtime.publish(request);
}

// How many descriptors this process has open (/proc/self/fd).
inline std::size_t open_descriptors() {
  std::size_t count = 0;
  for ([[maybe_unused]] const auto &entry : boost::filesystem::directory_iterator("/proc/self/fd")) ++count;
  return count;
}

// host_fma(2, 3, 1) through an instance of a loaded copy of a host-only test plugin: 7.
inline double example_fma(const Module &module) {
  Instance instance = module.create_instance();
  const auto *table = instance.interface<kiln_example_v1>(KILN_EXAMPLE_INTERFACE_ID);
  REQUIRE(table != nullptr);
  return table->host_fma(instance.handle(), 2.0, 3.0, 1.0);
}

// A plugin file published as <consumer>/solver into a temporary store and loaded: the store, the
// runtime, the module (the IK and TrajOpt tests' way to a plugin).
struct PublishedPlugin {
  PublishedPlugin(const std::string &file, const std::string &consumer, const std::string &archs,
                  std::optional<std::string> declared_device)
      : runtime(std::make_unique<Runtime>(store_options(dir, std::move(declared_device)))) {
    PublishRequest request;
    request.consumer = consumer;
    request.name = "solver";
    request.artifact_file = file;
    request.archs = Arch::parse_list(archs);
    published = runtime->publish(request);
    module.emplace(runtime->load(consumer, "solver"));
  }
  TempDir dir;
  std::unique_ptr<Runtime> runtime;
  PublishResult published;
  std::optional<Module> module;
};

// The what() of the E that body throws; fails the test when it throws nothing.
template <class E>
std::string error_of(const std::function<void()> &body) {
  try {
    body();
  } catch (const E &error) {
    return error.what();
  }
  FAIL("expected exception was not thrown");
  return "";
}

inline bool has(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// A LogCallback that keeps every line (thread-safe), for asserting what the host was told.
class CollectedLog {
 public:
  LogCallback callback() {
    return [this](LogLevel, const std::string &line) {
      std::lock_guard<std::mutex> lock(mutex_);
      lines_.push_back(line);
    };
  }
  std::string text() const {
    std::lock_guard<std::mutex> lock(mutex_);
    std::string all;
    for (const auto &line : lines_) all += line + "\n";
    return all;
  }

 private:
  mutable std::mutex mutex_;
  std::vector<std::string> lines_;
};

}  // namespace kiln::test
