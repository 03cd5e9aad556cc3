// kiln_bench_peak_rss PROGRAM [ARGS...]: runs PROGRAM (its output discarded) and prints its peak
// resident set in KiB, or "failed" when it did not exit 0.
//
// Why a launcher of its own: a process started from a large one (posix_spawn's vfork, or fork)
// has its parent's resident set counted into its own peak when it execs, so a bench holding
// hundreds of MB could not measure a small child directly. This launcher is small.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kiln_bench_peak_rss PROGRAM [ARGS...]\n");
    return 2;
  }
  const pid_t pid = ::fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(argv[1], argv + 1);
    ::_exit(127);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::printf("failed\n");
    return 1;
  }
  std::printf("%ld\n", usage.ru_maxrss);
  return 0;
}
