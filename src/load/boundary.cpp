#include "load/boundary.hpp"

#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <typeinfo>

#include <kiln/errors.hpp>

namespace kiln::load {
namespace {

std::string demangled(const char *name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void *)> readable(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && readable ? std::string(readable.get()) : std::string(name);
}

std::string escaped_text(const std::string &file, const char *function) {
  return "plugin " + file + " let an exception escape from " + function + " (" + describe_current_exception() +
         "): exceptions must not cross the plugin ABI (abi/README.md \"Ownership, status codes and messages\"); the "
         "plugin is broken: fix it to return a kiln_status (the KILN_PLUGIN helper of <kiln/plugin.hpp> does this)";
}

}  // namespace

std::string describe_current_exception() {
  const std::type_info *type = abi::__cxa_current_exception_type();
  const std::string type_name = type != nullptr ? demangled(type->name()) : std::string("unknown type");
  try {
    throw;
  } catch (const std::exception &error) {
    return type_name + ": " + bounded_string(error.what(), 1024);
  } catch (...) {
    return "of type " + type_name;
  }
}

void throw_escaped(const std::string &file, const char *function) { throw AbiError(escaped_text(file, function)); }

void log_escaped(const LogCallback &log, const std::string &file, const char *function) noexcept {
  try {
    if (log) log(LogLevel::error, escaped_text(file, function) + "; the host carried on");
  } catch (...) {
    // Nothing left to tell: a destructor must not throw.
  }
}

std::string_view bounded_view(const char *text, std::size_t max_size) noexcept {
  if (text == nullptr) return {};
  return std::string_view(text, ::strnlen(text, max_size));
}

std::string bounded_string(const char *text, std::size_t max_size) { return std::string(bounded_view(text, max_size)); }

}  // namespace kiln::load
