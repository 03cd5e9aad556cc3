// Reading kiln's environment variables.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::support {

// The variable's value; nullopt when unset or empty (an empty setting means "not set" for every
// kiln variable). secure_getenv: in a setuid/setgid process the environment belongs to the
// caller, who must not choose the stores, toolchains or libraries (and thereby the code) it runs.
inline std::optional<std::string> env_value(const char *name) {
  const char *value = ::secure_getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

}  // namespace kiln::support
