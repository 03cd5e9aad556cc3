// The two shapes of a kiln::realtime::Step.
#pragma once

#include <string>

#include <kiln/realtime.hpp>

namespace kiln::realtime::detail {

Step done(std::string what, std::string detail);
// Refused with `error` (an errno): its text, then how to permit it.
Step refused(std::string what, int error, const std::string &fix);

}  // namespace kiln::realtime::detail
