// Small helpers the test files share for what they check: text containing text, the message an
// action throws, a condition becoming true within a limit.
#pragma once

#include <chrono>
#include <string>
#include <thread>

#include <kiln/errors.hpp>
#include <kiln/identity.hpp>

namespace kiln::test {

inline bool contains(const std::string &text, const std::string &part) { return text.find(part) != std::string::npos; }

// What fn throws as a kiln::Error (its kind into *kind when asked), or "" when it does not throw.
template <class Fn>
std::string error_of(Fn fn, ErrorKind *kind = nullptr) {
  try {
    fn();
  } catch (const Error &error) {
    if (kind != nullptr) *kind = error.kind();
    return error.what();
  }
  return "";
}

// Polls predicate every 5 ms until it holds (true) or `limit` passes (false).
template <typename Predicate>
bool eventually(Predicate predicate, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!predicate()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

// A device as a test declares it: compute capability, integrated (Tegra) or not, driver version.
inline DeviceIdentity make_device(int major, int minor, bool integrated = false, int driver = 13000) {
  DeviceIdentity device;
  device.cc_major = major;
  device.cc_minor = minor;
  device.integrated = integrated;
  device.driver_version = driver;
  device.name = "test " + device.arch_name();
  return device;
}

}  // namespace kiln::test
