// kiln: the library never prints; it hands messages to a callback.
#pragma once

#include <functional>
#include <string>

namespace kiln {

enum class LogLevel { debug = 0, info = 1, warning = 2, error = 3 };
const char *to_string(LogLevel level);

// Called from whichever thread did the work; must be thread-safe if the runtime is shared.
using LogCallback = std::function<void(LogLevel, const std::string &)>;

}  // namespace kiln
