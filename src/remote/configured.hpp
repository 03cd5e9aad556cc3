// The remote caches of one store, read from its kiln.conf and the environment on first use (a
// build, `kiln remote status` or `push`), never by a load: a process that only loads plugins
// reads no remote configuration and maps no remote backend.
//
// Threads: any thread.
#pragma once

#include <memory>
#include <mutex>

#include <boost/filesystem/path.hpp>

#include <kiln/log.hpp>

#include "remote/cache.hpp"

namespace kiln::remote {

class ConfiguredRemotes {
 public:
  ConfiguredRemotes(boost::filesystem::path config_file, LogCallback log)
      : config_file_(std::move(config_file)), log_(std::move(log)) {}

  // nullptr when none is configured. UsageError for a malformed configuration, asked again on
  // the next call (a user who fixes kiln.conf need not restart the process).
  std::shared_ptr<const RemoteCache> get() const {
    std::lock_guard<std::mutex> guard(mutex_);
    if (!configured_) {
      RemoteConfig config = load_config(config_file_);
      if (config.any()) cache_ = std::make_shared<const RemoteCache>(std::move(config), log_);
      configured_ = true;
    }
    return cache_;
  }
  const boost::filesystem::path &config_file() const { return config_file_; }

 private:
  const boost::filesystem::path config_file_;
  const LogCallback log_;
  mutable std::mutex mutex_;
  mutable bool configured_ = false;
  mutable std::shared_ptr<const RemoteCache> cache_;
};

}  // namespace kiln::remote
