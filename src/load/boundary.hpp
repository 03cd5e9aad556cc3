// Calls from the host into plugin code. The ABI forbids exceptions across it, but a broken
// plugin may still throw anything (a std::exception, an int, a type the host cannot name):
// none of that may reach the host untyped or terminate it. Every call into a plugin goes
// through call_plugin (an escaping exception becomes an AbiError naming the plugin file and
// the function) or, where the host cannot throw (destructors, noexcept), call_plugin_quietly
// (the exception is logged and dropped).
#pragma once

#include <cxxabi.h>

#include <cstddef>
#include <string>
#include <string_view>

#include <kiln/log.hpp>

namespace kiln::load {

// Inside a catch block: the current exception's type and, for a std::exception, its message.
std::string describe_current_exception();

// Inside a catch block: throws the AbiError for an exception that escaped `function` of the
// plugin `file`.
[[noreturn]] void throw_escaped(const std::string &file, const char *function);

// Inside a catch block: logs (error level) that an exception escaped `function`; never throws.
void log_escaped(const LogCallback &log, const std::string &file, const char *function) noexcept;

template <class F>
decltype(auto) call_plugin(const std::string &file, const char *function, F &&call) {
  try {
    return call();
  } catch (abi::__forced_unwind &) {
    throw;  // thread cancellation must keep unwinding
  } catch (...) {
    throw_escaped(file, function);
  }
}

template <class F>
void call_plugin_quietly(const LogCallback &log, const std::string &file, const char *function, F &&call) noexcept {
  try {
    call();
  } catch (...) {
    log_escaped(log, file, function);
  }
}

// A NUL-terminated copy of a string the plugin owns, read no further than max_size bytes: a
// string without its NUL must not make the host read on through the plugin's memory.
std::string bounded_string(const char *text, std::size_t max_size = 256);
// The same as a view of the plugin's bytes (nothing copied).
std::string_view bounded_view(const char *text, std::size_t max_size = 256) noexcept;

// The host's message buffer after a call: terminated by the host itself, whatever the plugin
// wrote into it.
template <std::size_t N>
std::string message_text(char (&buffer)[N]) {
  buffer[N - 1] = '\0';
  return buffer[0] != '\0' ? std::string(buffer) : std::string("no message");
}

}  // namespace kiln::load
