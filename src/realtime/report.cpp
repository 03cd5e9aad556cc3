// kiln::realtime::Report: the steps of a control thread's preparation, and the line a
// controller logs.
#include <kiln/realtime.hpp>

#include <cerrno>
#include <cstring>

#include "realtime/refusal.hpp"

namespace kiln::realtime {

const Step &Report::add(Step step) {
  steps.push_back(std::move(step));
  return steps.back();
}

bool Report::all_done() const noexcept {
  for (const auto &step : steps) {
    if (!step.done) return false;
  }
  return true;
}

std::string Report::summary() const {
  std::string line;
  for (const auto &step : steps) {
    if (!line.empty()) line += "; ";
    line += step.what;
    line += step.done ? ": done" : ": refused";
    if (!step.detail.empty()) line += (step.done ? " (" + step.detail + ")" : ": " + step.detail);
  }
  return line;
}

namespace detail {

Step done(std::string what, std::string detail) {
  Step step;
  step.what = std::move(what);
  step.done = true;
  step.detail = std::move(detail);
  return step;
}

Step refused(std::string what, int error, const std::string &fix) {
  Step step;
  step.what = std::move(what);
  step.error = error;
  step.detail = std::strerror(error);
  if (!fix.empty()) step.detail += " (" + fix + ")";
  return step;
}

}  // namespace detail

}  // namespace kiln::realtime
