#include "support/utc_time.hpp"

#include <cctype>
#include <ctime>

namespace kiln::support {

bool is_utc_time(const std::string &text) {
  static constexpr char kShape[] = "dddd-dd-ddTdd:dd:ddZ";
  if (text.size() != sizeof kShape - 1) return false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return false;
  }
  return true;
}

std::optional<std::int64_t> parse_utc_time(const std::string &text) {
  if (!is_utc_time(text)) return std::nullopt;
  std::tm utc{};
  utc.tm_year = std::stoi(text.substr(0, 4)) - 1900;
  utc.tm_mon = std::stoi(text.substr(5, 2)) - 1;
  utc.tm_mday = std::stoi(text.substr(8, 2));
  utc.tm_hour = std::stoi(text.substr(11, 2));
  utc.tm_min = std::stoi(text.substr(14, 2));
  utc.tm_sec = std::stoi(text.substr(17, 2));
  if (utc.tm_mon > 11 || utc.tm_mday < 1 || utc.tm_mday > 31 || utc.tm_hour > 23 || utc.tm_min > 59 ||
      utc.tm_sec > 60) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(timegm(&utc));
}

std::string format_utc_time(std::int64_t seconds) {
  const auto time = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&time, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

}  // namespace kiln::support
