#include "streamed_listing.hpp"

#include <cstdio>
#include <iostream>

#include "report_json.hpp"

namespace kiln::cli {
namespace {

std::string compact(const nlohmann::json &value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void StreamedListing::open() {
  if (opened_) return;
  opened_ = true;
  if (json_) std::cout << "{\n  " << compact(key_) << ": [";
}

void StreamedListing::write_json(const nlohmann::json &value) {
  std::cout << (first_ ? "\n    " : ",\n    ") << compact(value);
  first_ = false;
}

void StreamedListing::write_text(const std::string &text) { std::cout << text; }

void StreamedListing::finish(const nlohmann::json &summary, const std::string &text) {
  open();
  if (!json_) {
    std::cout << text << std::flush;
    return;
  }
  std::cout << (first_ ? "]" : "\n  ]");
  for (const auto &[name, value] : summary.items()) {
    if (name != key_) std::cout << ",\n  " << compact(name) << ": " << compact(value);
  }
  std::cout << "\n}\n" << std::flush;
}

int StreamedListing::fail(const std::exception &error) {
  if (!opened_) throw;
  const nlohmann::json details = error_json(error);
  if (json_) std::cout << (first_ ? "]" : "\n  ]") << ",\n  \"error\": " << compact(details) << "\n}\n" << std::flush;
  std::fprintf(stderr, "kiln: error: %s\n", error.what());
  return details["exit_code"].get<int>();
}

}  // namespace kiln::cli
