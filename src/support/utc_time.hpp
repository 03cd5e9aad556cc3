// UTC times in the one form kiln writes them: "2026-01-31T23:59:59Z" (store records, bundle
// indexes, release versions). In that form they order as text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace kiln::support {

// The form exactly: digits where strftime's %Y-%m-%dT%H:%M:%SZ writes them, nothing else checked.
bool is_utc_time(const std::string &text);
// Seconds since the epoch; nullopt for another form or a field out of range (month 13).
std::optional<std::int64_t> parse_utc_time(const std::string &text);
std::string format_utc_time(std::int64_t seconds);

}  // namespace kiln::support
