// Compiles never outlive kiln: a library host SIGKILLed mid-build takes its compiler and the
// compiler's own children with it, and cancelling through BuildOptions::cancel kills them too
// (also while the build still waits for another process's compile of the same inputs).
// The compiler is tests/data/orphans/fake-nvcc.sh: it starts a grandchild and waits forever.
#include <doctest/doctest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <boost/filesystem/operations.hpp>

#include <kiln/cancel.hpp>
#include <kiln/errors.hpp>
#include <kiln/recipe.hpp>
#include <kiln/runtime.hpp>

#include "builder/toolchain.hpp"
#include "support/fixtures.hpp"
#include "support/checks.hpp"
#include "support/processes.hpp"

using namespace kiln;
using kiln::test::ScopedEnv;
using kiln::test::TempDir;
using kiln::test::eventually;
using kiln::test::running;
using kiln::test::Seen;
using kiln::test::seen;
namespace fs = boost::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

class OrphanFixture {
 public:
  OrphanFixture()
      : nvcc_(std::string("KILN_NVCC"), (dir_ / "src" / "fake-nvcc.sh").string()),
        pid_dir_(std::string("KILN_TEST_PID_DIR"), (dir_ / "pids").string()) {
    fs::create_directories(dir_ / "src");
    fs::create_directories(dir_ / "pids");
    for (fs::directory_iterator it(fs::path(KILN_TEST_SOURCE_DIR) / "tests" / "data" / "orphans"), end; it != end; ++it) {
      fs::copy_file(it->path(), dir_ / "src" / it->path().filename());
    }
    builder::reset_toolchain_memo_for_tests();
  }
  ~OrphanFixture() {
    for (const auto &seen : {child_, grandchild_}) {
      if (seen.pid > 0 && running(seen)) ::kill(seen.pid, SIGKILL);  // never leave the test's own mess
    }
  }
  OrphanFixture(const OrphanFixture &) = delete;
  OrphanFixture &operator=(const OrphanFixture &) = delete;

  fs::path cache() const { return dir_ / "cache"; }
  fs::path recipe_file() const { return dir_ / "src" / "recipe.json"; }
  Recipe recipe() const { return Recipe::load(recipe_file().string()); }
  RuntimeOptions options() const {
    RuntimeOptions options;
    options.cache_dir = cache().string();
    options.declared_device = "sm_90";
    return options;
  }

  // Waits until the fake compiler has recorded itself and its grandchild; false if `gave_up`
  // says the build ended first, or after 60 s.
  template <typename GaveUp>
  bool wait_for_compile(GaveUp gave_up) {
    const fs::path child = dir_ / "pids" / "child", grandchild = dir_ / "pids" / "grandchild";
    const bool started = eventually([&] { return (fs::exists(child) && fs::exists(grandchild)) || gave_up(); },
                                    std::chrono::milliseconds(60000));
    if (!started || !fs::exists(child) || !fs::exists(grandchild)) return false;
    child_ = seen(std::stoi(kiln::test::read_text(child)));
    grandchild_ = seen(std::stoi(kiln::test::read_text(grandchild)));
    return running(child_) && running(grandchild_);
  }
  bool compile_started() const { return fs::exists(dir_ / "pids" / "child"); }
  bool compile_running() const { return running(child_) || running(grandchild_); }

  int staged_or_published() const {
    int count = 0;
    boost::system::error_code error;
    for (fs::directory_iterator it(cache() / "consumers" / "orphan-tests" / "store", error), end; !error && it != end;
         it.increment(error)) {
      ++count;
    }
    return count;
  }

 private:
  TempDir dir_;
  ScopedEnv nvcc_, pid_dir_;
  Seen child_, grandchild_;
};

}  // namespace

TEST_CASE("orphans: a library host SIGKILLed mid-build leaves no compiler or grandchild of it running") {
  OrphanFixture fx;
  const std::string cache = fx.cache().string(), recipe = fx.recipe_file().string();
  const pid_t host = ::fork();  // the environment (KILN_NVCC, KILN_TEST_PID_DIR) goes with it
  if (host == 0) {
    ::execl(KILN_TEST_BUILD_HOST, KILN_TEST_BUILD_HOST, cache.c_str(), recipe.c_str(), static_cast<char *>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  const bool compiling = fx.wait_for_compile([&] { return ::waitpid(host, &status, WNOHANG) == host; });
  REQUIRE_MESSAGE(compiling, "the host never reached the compile (exit status " << status << ")");

  ::kill(host, SIGKILL);
  ::waitpid(host, nullptr, 0);
  // No grace period to wait out: the watchdog SIGKILLs the group as soon as the host is gone.
  CHECK(eventually([&] { return !fx.compile_running(); }, std::chrono::milliseconds(3000)));
}

TEST_CASE("orphans: BuildOptions::cancel kills the compiler and its grandchildren; nothing is published") {
  OrphanFixture fx;
  Runtime runtime(fx.options());
  CancelToken cancel;
  BuildOptions options;
  options.cancel = &cancel;
  std::string error;
  std::atomic<bool> finished{false};
  std::thread build([&] {
    try {
      runtime.build(fx.recipe(), options);
    } catch (const Error &caught) {
      error = caught.what();
    }
    finished = true;
  });
  const bool compiling = fx.wait_for_compile([&] { return finished.load(); });
  if (!compiling) cancel.cancel();  // let the thread end before failing
  REQUIRE_MESSAGE(compiling, "the build never reached the compile: " << error);

  const auto cancelled_at = Clock::now();
  cancel.cancel();
  build.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - cancelled_at).count();
  CHECK(seconds < 5.0);
  CHECK_MESSAGE(error.find("cancelled") != std::string::npos, error);
  CHECK(eventually([&] { return !fx.compile_running(); }, std::chrono::milliseconds(3000)));
  CHECK(fx.staged_or_published() == 0);  // the staging directory went with the build
}

TEST_CASE("orphans: BuildOptions::cancel stops a build that waits for another process's compile of its inputs") {
  OrphanFixture fx;
  Runtime runtime(fx.options());
  const Recipe recipe = fx.recipe();
  const std::string lock_file =
      (fx.cache() / "consumers" / "orphan-tests" / "locks" / (runtime.plan(recipe).input_key + ".lock")).string();
  fs::create_directories(fs::path(lock_file).parent_path());

  // Another process builds those inputs (holds their build lock) for 8 s.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t other = ::fork();
  if (other == 0) {
    const int fd = ::open(lock_file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    const char ok = (fd >= 0 && ::fcntl(fd, F_OFD_SETLK, &lock) == 0) ? 1 : 0;
    (void)!::write(ready[1], &ok, 1);
    ::sleep(8);
    ::_exit(0);
  }
  char ok = 0;
  REQUIRE(::read(ready[0], &ok, 1) == 1);
  REQUIRE(ok == 1);

  CancelToken cancel;
  BuildOptions options;
  options.cancel = &cancel;
  std::string error;
  std::thread build([&] {
    try {
      runtime.build(recipe, options);
    } catch (const Error &caught) {
      error = caught.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // waiting for the lock by now
  const auto cancelled_at = Clock::now();
  cancel.cancel();
  build.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - cancelled_at).count();
  CHECK(seconds < 2.0);  // not the 8 s until the other build would have finished
  CHECK_MESSAGE(error.find("cancelled") != std::string::npos, error);
  CHECK_FALSE(fx.compile_started());
  ::kill(other, SIGKILL);
  ::waitpid(other, nullptr, 0);
  ::close(ready[0]);
  ::close(ready[1]);
}
