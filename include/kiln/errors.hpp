// kiln: the typed errors of the C++ API.
//
// Every error says what input it concerns and what would fix it. The CLI maps each kind to
// a documented exit code (docs/cli.md "Exit codes").
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kiln {

enum class ErrorKind {
  usage = 2,         // bad argument or bad name
  not_found = 3,     // consumer, artifact, file or store missing
  incompatible = 4,  // recorded identity does not fit this kiln or this device
  abi = 5,           // not a kiln plugin, or negotiation / interface contract failed
  integrity = 6,     // digest, stamp or store safety check failed; corrupt file
  build = 7,         // a build step failed (carries the log)
  timeout = 8,       // a call into plugin code did not return within its deadline (hot swap)
  other = 1,         // I/O, driver and everything else
};

// One field that differs between what an artifact records and what is here now.
struct Reason {
  std::string field;     // e.g. "cuda_arch"
  std::string recorded;  // e.g. "sm_87"
  std::string current;   // e.g. "sm_90"
  std::string note;      // why it matters / what to do, may be empty

  std::string to_string() const;  // "cuda_arch: recorded sm_87, device sm_90 (note)"
};

class Error : public std::runtime_error {
 public:
  Error(ErrorKind kind, const std::string &message) : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const noexcept { return kind_; }
  int exit_code() const noexcept { return static_cast<int>(kind_); }

 private:
  ErrorKind kind_;
};

struct UsageError : Error {
  explicit UsageError(const std::string &m) : Error(ErrorKind::usage, m) {}
};
struct NotFoundError : Error {
  explicit NotFoundError(const std::string &m) : Error(ErrorKind::not_found, m) {}
};
// No build toolchain at all for a recipe's backend: no nvcc (nvcc recipes), no NVRTC library
// (nvrtc recipes). The one build failure after which Runtime::ensure / ensure_kernels load the
// prepared artifact instead; any other failure (a compiler that runs but writes nothing, a
// missing source, a half-installed toolchain) is reported as it is.
struct ToolchainMissingError : NotFoundError {
  explicit ToolchainMissingError(const std::string &m) : NotFoundError(m) {}
};
struct AbiError : Error {
  explicit AbiError(const std::string &m) : Error(ErrorKind::abi, m) {}
};
struct IntegrityError : Error {
  explicit IntegrityError(const std::string &m) : Error(ErrorKind::integrity, m) {}
};
struct IoError : Error {
  explicit IoError(const std::string &m) : Error(ErrorKind::other, m) {}
};
struct TimeoutError : Error {
  explicit TimeoutError(const std::string &m) : Error(ErrorKind::timeout, m) {}
};

// The artifact does not fit; reasons() lists every differing field.
class IncompatibleError : public Error {
 public:
  IncompatibleError(const std::string &what_was_checked, std::vector<Reason> reasons);
  const std::vector<Reason> &reasons() const noexcept { return reasons_; }

 private:
  std::vector<Reason> reasons_;
};

// A build failed; log() holds the failing step's output.
class BuildError : public Error {
 public:
  BuildError(const std::string &message, std::string log) : Error(ErrorKind::build, message), log_(std::move(log)) {}
  const std::string &log() const noexcept { return log_; }

 private:
  std::string log_;
};

}  // namespace kiln
