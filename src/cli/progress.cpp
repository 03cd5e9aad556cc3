#include "progress.hpp"

#include <unistd.h>

#include <algorithm>

#include <nlohmann/json.hpp>

namespace kiln::cli {
namespace {

const char *event_kind_name(BuildEvent::Kind kind) {
  using Kind = BuildEvent::Kind;
  switch (kind) {
    case Kind::units_queued: return "units_queued";
    case Kind::generator_started: return "generator_started";
    case Kind::generator_finished: return "generator_finished";
    case Kind::unit_started: return "unit_started";
    case Kind::unit_finished: return "unit_finished";
    case Kind::link_started: return "link_started";
    case Kind::link_finished: return "link_finished";
  }
  return "unknown";
}

std::string seconds_label(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f s", seconds);
  return text;
}

// [done/total]; a backend that runs more steps than it announced only grows the total.
std::string progress_counter(std::size_t done, std::size_t total) {
  return "[" + std::to_string(done) + "/" + std::to_string(std::max(done, total)) + "]";
}

}  // namespace

ProgressReporter::Mode ProgressReporter::mode_for(bool json, bool quiet) {
  if (quiet) return Mode::quiet;
  if (json) return Mode::json;
  return ::isatty(STDERR_FILENO) ? Mode::terminal : Mode::plain;
}

ProgressReporter::ProgressReporter(Mode mode, std::FILE *out) : mode_(mode), out_(out) {
  if (mode_ == Mode::terminal) ticker_ = std::thread([this] { tick(); });
}

ProgressReporter::~ProgressReporter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  stop_.notify_all();
  if (ticker_.joinable()) ticker_.join();
}

void ProgressReporter::tick() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_.wait_for(lock, std::chrono::milliseconds(500), [this] { return stopping_; })) {
    if (!running_.empty()) redraw_status();
  }
}

void ProgressReporter::on_event(const BuildEvent &event) {
  using Kind = BuildEvent::Kind;
  if (mode_ == Mode::quiet) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (event.kind == Kind::units_queued) {
    total_ += event.total;
    build_ = event.name;
  }
  if (event.kind == Kind::unit_started) running_.push_back(event.name);
  if (event.kind == Kind::unit_finished) {
    const auto running = std::find(running_.begin(), running_.end(), event.name);
    if (running != running_.end()) running_.erase(running);
    finished_.push_back({event.name, event.seconds, event.cached});
  }
  if (mode_ == Mode::json) return json_event(event);

  const std::string count = progress_counter(finished_.size(), total_);
  switch (event.kind) {
    case Kind::units_queued:
      line(event.name + ": " + std::to_string(event.total) + " unit(s) to compile or take from the object cache");
      break;
    case Kind::generator_started:
      if (mode_ == Mode::plain) line("generate " + event.name + " ...");
      break;
    case Kind::generator_finished:
      line(std::string(event.cached ? "reused   " : "generated ") + event.name +
           (event.cached ? " (an identical step ran before)" : " in " + seconds_label(event.seconds)));
      break;
    case Kind::unit_started:
      if (mode_ == Mode::plain) line("compile  " + event.name + " ... " + count);
      break;
    case Kind::unit_finished:
      line(std::string(event.cached ? "cached   " : "compiled ") + event.name +
           (event.cached ? "" : " in " + seconds_label(event.seconds)) + " " + count);
      break;
    case Kind::link_started:
      if (mode_ == Mode::plain) line("link     " + event.name + " ...");
      break;
    case Kind::link_finished:
      line("linked   " + event.name + " in " + seconds_label(event.seconds));
      break;
  }
  if (mode_ == Mode::terminal) redraw_status();
}

void ProgressReporter::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (mode_ == Mode::quiet || finished_.empty()) return;
  std::size_t cached = 0;
  const Unit *slowest = nullptr;
  for (const auto &unit : finished_) {
    if (unit.cached) ++cached;
    else if (slowest == nullptr || unit.seconds > slowest->seconds) slowest = &unit;
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (mode_ == Mode::json) {
    nlohmann::json summary = {{"event", "finished"}, {"build", build_}, {"units", finished_.size()},
                              {"compiled", finished_.size() - cached}, {"cached", cached}, {"seconds", total}};
    if (slowest != nullptr) summary["slowest"] = {{"name", slowest->name}, {"seconds", slowest->seconds}};
    std::fprintf(out_, "%s\n", summary.dump().c_str());
    std::fflush(out_);
    return;
  }
  if (status_shown_) std::fputs("\r\033[K", out_);
  status_shown_ = false;
  line(std::to_string(finished_.size()) + " unit(s): " + std::to_string(finished_.size() - cached) + " compiled, " +
       std::to_string(cached) + " cached" +
       (slowest != nullptr ? "; slowest " + slowest->name + " " + seconds_label(slowest->seconds) : std::string()) +
       "; total " + seconds_label(total));
}

void ProgressReporter::line(const std::string &text) {
  if (status_shown_) std::fputs("\r\033[K", out_);  // the status line gives way to the record
  status_shown_ = false;
  std::fprintf(out_, "kiln: %s\n", text.c_str());
  std::fflush(out_);
}

void ProgressReporter::json_event(const BuildEvent &event) {
  nlohmann::json value = {{"event", event_kind_name(event.kind)}, {"name", event.name}};
  if (event.kind == BuildEvent::Kind::units_queued) value["total"] = event.total;
  if (event.kind == BuildEvent::Kind::unit_finished || event.kind == BuildEvent::Kind::generator_finished ||
      event.kind == BuildEvent::Kind::link_finished) {
    value["seconds"] = event.seconds;
    value["cached"] = event.cached;
  }
  if (event.kind == BuildEvent::Kind::unit_started || event.kind == BuildEvent::Kind::unit_finished) {
    value["done"] = finished_.size();
    value["total"] = std::max(finished_.size(), total_);
  }
  std::fprintf(out_, "%s\n", value.dump().c_str());
  std::fflush(out_);
}

// The live line under the records: how far, and what is compiling now.
void ProgressReporter::redraw_status() {
  if (running_.empty()) {
    if (status_shown_) std::fputs("\r\033[K", out_);
    status_shown_ = false;
    std::fflush(out_);
    return;
  }
  std::string names;
  for (const auto &name : running_) names += (names.empty() ? "" : ", ") + name;
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fprintf(out_, "\r\033[Kkiln: %s compiling %s (%s)", progress_counter(finished_.size(), total_).c_str(), names.c_str(),
               seconds_label(elapsed).c_str());
  status_shown_ = true;
  std::fflush(out_);
}

}  // namespace kiln::cli
