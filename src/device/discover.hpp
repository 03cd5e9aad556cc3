// kiln internal: what the devices of this process are (Driver API) and what is declared.
#pragma once

#include <optional>
#include <string>

#include <kiln/identity.hpp>

namespace kiln::device {

class Driver;

// Enumerates every live device through Driver::instance() (cuInit runs on the first call of
// the process) and parses declared_text (KILN_DEVICE's form, see parse_declared_device) into
// `declared`. Driver trouble never throws: it is the report's state and detail. A malformed
// declared_text throws UsageError.
DeviceReport discover(const std::optional<std::string> &declared_text);

// The same against a given driver (tests use one opened on a stub or a missing path).
DeviceReport discover(Driver &driver, const std::optional<std::string> &declared_text);

}  // namespace kiln::device
