// Build progress for a person or a script, on stderr (stdout keeps the result):
//   terminal  a line per finished step and a live status line: [done/total], what is compiling
//   plain     one line per event (stderr is not a terminal: a log, CI, a pipe)
//   json      one JSON object per line per event (--json), then the summary event
//   quiet     nothing (--quiet)
// A build that compiled anything ends with a summary: units compiled and cached, the slowest,
// the total time.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <kiln/recipe.hpp>

namespace kiln::cli {

class ProgressReporter {
 public:
  enum class Mode { terminal, plain, json, quiet };
  static Mode mode_for(bool json, bool quiet);  // terminal when stderr is one

  explicit ProgressReporter(Mode mode, std::FILE *out = stderr);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter &) = delete;
  ProgressReporter &operator=(const ProgressReporter &) = delete;
  void on_event(const BuildEvent &event);
  // The summary, when anything ran; a hit prints nothing.
  void finish();

 private:
  struct Unit {
    std::string name;
    double seconds = 0;
    bool cached = false;
  };
  void line(const std::string &text);
  void json_event(const BuildEvent &event);
  void redraw_status();

  void tick();  // terminal: the status line's clock moves while a unit compiles for minutes

  Mode mode_;
  std::FILE *out_;
  std::mutex mutex_;  // events, the summary and the ticker
  std::condition_variable stop_;
  bool stopping_ = false;
  std::thread ticker_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::size_t total_ = 0;
  std::vector<std::string> running_;
  std::vector<Unit> finished_;
  std::string build_;  // consumer/name, from units_queued
  bool status_shown_ = false;
};

}  // namespace kiln::cli
