// A store and the operations the reliability suite runs on it: publishes of a test plugin and
// builds of recipe variants through the fast stand-in compiler, NVRTC or the real nvcc, each as
// a kiln CLI command line with its environment.
#pragma once

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::reliability {

namespace fs = boost::filesystem;

// What this machine can build with (the suite skips, visibly, what it lacks).
struct Toolchains {
  bool nvrtc = false;
  std::string nvrtc_detail;
  std::string nvcc;  // the real nvcc, empty when there is none
};
const Toolchains &toolchains();

enum class Backend { fake_nvcc, nvrtc, real_nvcc };
const char *to_string(Backend backend);

// One CLI invocation that changes the store.
struct Op {
  std::string label;  // e.g. "publish crash/p1 (variant sm_90)"
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string consumer, name;  // what it (re)names
};

class Workspace {
 public:
  explicit Workspace(fs::path root);  // root must exist; the store and recipes go below it

  const fs::path &root() const { return root_; }
  fs::path store() const { return root_ / "store"; }
  fs::path compile_log() const { return root_ / "nvcc.log"; }  // every (fake or real) nvcc call
  // The environment of every kiln child: this store only, a declared sm_90 device, the compilers.
  std::map<std::string, std::string> env() const;

  // kiln publish of the host-only test plugin (host code: --arch none). Each variant is another
  // entry of that file: "none" as it is, any other ("sm_90", "sm_80", ...) recorded with toolkit
  // version 12000 + the variant's digits (its own content key; a claim of archs the file does
  // not hold would be refused).
  Op publish(const std::string &name, const std::string &variant = "none",
             const std::string &consumer = "crash") const;
  // kiln build of recipe `name`; each variant is another input key (a define differs).
  Op build(Backend backend, const std::string &name, int variant, const std::string &consumer = "crash") const;
  fs::path recipe(Backend backend, const std::string &name, int variant, const std::string &consumer) const;
  std::vector<std::string> kiln(std::vector<std::string> args) const;  // argv of the CLI

 private:
  fs::path root_;
};

}  // namespace kiln::reliability
