// Child processes for the reliability suite: started with posix_spawn and an environment of
// their own, waited for, or SIGKILLed at a chosen moment; their orphaned compilers reaped.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include <boost/filesystem/path.hpp>

namespace kiln::reliability {

namespace fs = boost::filesystem;

struct Outcome {
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  double seconds = 0;
  std::string out, err;

  bool ok() const { return signal == 0 && exit_code == 0; }
  bool killed() const { return signal == 9; }
  std::string describe() const;  // "exit 3: <stderr>" / "signal 9"
};

// One running child. stdout and stderr go to files under `scratch` (read back by wait()).
// Environment: this process's, with `env` added (an empty value sets the variable empty).
class Child {
 public:
  Child(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env, const fs::path &scratch);
  ~Child();
  Child(const Child &) = delete;
  Child &operator=(const Child &) = delete;

  pid_t pid() const { return pid_; }
  bool exited();   // reaped already, or reaped now without waiting
  void kill();     // SIGKILL (a no-op once it has exited)
  Outcome wait();  // waits, then reads its output

 private:
  Outcome collect(int status);

  pid_t pid_ = -1;
  bool done_ = false;
  Outcome outcome_;
  fs::path out_, err_;
  double started_ = 0;
};

// Runs to completion and returns the outcome.
Outcome run(const std::vector<std::string> &argv, const std::map<std::string, std::string> &env,
            const fs::path &scratch);

// A killed kiln can leave its compilers running (its children outlive a SIGKILL): while this
// guard lives, this process adopts orphaned descendants (PR_SET_CHILD_SUBREAPER) and
// end_orphans() SIGKILLs and reaps every child left, so the next check sees a quiet store.
class OrphanReaper {
 public:
  OrphanReaper();
  ~OrphanReaper();
  OrphanReaper(const OrphanReaper &) = delete;
  OrphanReaper &operator=(const OrphanReaper &) = delete;
  // Returns how many were ended. Only call while no other child of this process should live.
  int end_orphans();
};

double now_seconds();

}  // namespace kiln::reliability
