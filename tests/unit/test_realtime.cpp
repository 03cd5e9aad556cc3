// kiln::realtime: each helper does what it reports, and reports a refusal with its reason
// instead of throwing.
#include <doctest/doctest.h>

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <kiln/realtime.hpp>
#include <kiln/swap.hpp>

#include "support/checks.hpp"
#include "support/swap_fixture.hpp"

using namespace kiln;

namespace {

// VmLck of /proc/self/status, in kB.
long locked_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmLck:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// Runs `body` on a thread of its own with a fresh stack of `size` bytes (mmap'd here, so none of
// its pages is resident before the thread touches it).
template <class Body>
void on_fresh_stack(std::size_t size, Body body) {
  void *stack = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  REQUIRE(stack != MAP_FAILED);
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setstack(&attr, stack, size);
  struct Call {
    static void *run(void *self) {
      (*static_cast<Body *>(self))();
      return nullptr;
    }
  };
  pthread_t thread;
  REQUIRE(::pthread_create(&thread, &attr, &Call::run, &body) == 0);
  ::pthread_join(thread, nullptr);
  ::pthread_attr_destroy(&attr);
  ::munmap(stack, size);
}

// How many of the pages of [low, high) are resident (mincore), of how many.
std::pair<std::size_t, std::size_t> resident_pages(std::uintptr_t low, std::uintptr_t high) {
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  low &= ~(page - 1);
  std::vector<unsigned char> flags((high - low + page - 1) / page);
  if (::mincore(reinterpret_cast<void *>(low), high - low, flags.data()) != 0) return {0, flags.size()};
  std::size_t resident = 0;
  for (unsigned char flag : flags) resident += flag & 1;
  return {resident, flags.size()};
}

}  // namespace

TEST_CASE("realtime: lock_memory reports what mlockall did, and a refusal with its reason") {
  const realtime::Step step = realtime::lock_memory();
  CHECK(step.what == "mlockall(MCL_CURRENT | MCL_FUTURE)");
  if (step.done) {
    CHECK(step.error == 0);
    CHECK(locked_kb() > 0);  // what it says it did, it did
    CHECK(test::contains(step.detail, "kB locked"));
    ::munlockall();          // the rest of the suite runs as before
  } else if (step.error == ENOTSUP) {  // mlockall answered 0 and locked nothing (a sanitizer's runtime)
    CHECK(test::contains(step.detail, "nothing locked"));
    CHECK(locked_kb() == 0);
  } else {
    CHECK((step.error == EPERM || step.error == ENOMEM || step.error == EAGAIN));
    CHECK(test::contains(step.detail, "CAP_IPC_LOCK"));
    CHECK(locked_kb() == 0);
  }
}

TEST_CASE("realtime: prefault_stack makes the stack below the caller resident, one write per page") {
  const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  constexpr std::size_t kStack = 1024 * 1024, kPrefault = 512 * 1024;
  realtime::Step step, too_deep;
  std::pair<std::size_t, std::size_t> before, after;
  on_fresh_stack(kStack, [&] {
    const auto top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
    // Well below this frame and above the prefaulted depth's end: nothing has touched it yet.
    const std::uintptr_t low = top - kPrefault + 4 * page, high = top - 16 * page;
    before = resident_pages(low, high);
    step = realtime::prefault_stack(kPrefault);
    after = resident_pages(low, high);
    too_deep = realtime::prefault_stack(kStack);
  });
  INFO(step.detail);
  CHECK(step.done);
  CHECK(step.detail == std::to_string(kPrefault) + " bytes, " + std::to_string(kPrefault / page) + " pages");
  REQUIRE(after.second > 64);
  CHECK(before.first < before.second / 2);
  CHECK(after.first == after.second);
  CHECK_FALSE(too_deep.done);
  CHECK(too_deep.error == ENOMEM);
  CHECK(test::contains(too_deep.detail, "larger stack"));
}

TEST_CASE("realtime: pin_thread runs the thread on an allowed CPU and refuses one outside its set") {
  const std::vector<int> allowed = realtime::allowed_cpus();
  REQUIRE_FALSE(allowed.empty());
  realtime::Step pinned, outside;
  std::vector<int> now_allowed;
  int ran_on = -1;
  std::thread([&] {
    outside = realtime::pin_thread(CPU_SETSIZE);
    pinned = realtime::pin_thread(allowed.back());
    now_allowed = realtime::allowed_cpus();
    ran_on = ::sched_getcpu();
  }).join();
  std::string listed;
  for (int cpu : allowed) listed += (listed.empty() ? "" : ",") + std::to_string(cpu);
  CHECK(pinned.done);
  CHECK(now_allowed == std::vector<int>{allowed.back()});
  CHECK(ran_on == allowed.back());
  CHECK_FALSE(outside.done);
  CHECK(outside.error == EINVAL);
  CHECK(test::contains(outside.detail, "allowed CPUs: " + listed));
}

TEST_CASE("realtime: set_fifo sets SCHED_FIFO or says why not; a priority out of range is refused") {
  realtime::Step fifo, out_of_range;
  int policy = -1;
  std::thread([&] {
    out_of_range = realtime::set_fifo(0);
    fifo = realtime::set_fifo(1);
    policy = ::sched_getscheduler(0);
  }).join();
  CHECK_FALSE(out_of_range.done);
  CHECK(out_of_range.error == EINVAL);
  CHECK(test::contains(out_of_range.detail, "priorities run 1..99"));
  if (fifo.done) {
    CHECK(policy == SCHED_FIFO);
  } else {
    CHECK(fifo.error == EPERM);
    CHECK(test::contains(fifo.detail, "CAP_SYS_NICE"));
    CHECK(policy != SCHED_FIFO);
  }
}

TEST_CASE("realtime: prefault_served reads every resident version's table; the report's summary lists each step") {
  test::SwapStore store;
  store.publish("a", KILN_TEST_PLUGIN_SWAP_V1);
  store.publish("b", KILN_TEST_PLUGIN_SWAP_V2);
  test::SwapProbe probe(store.runtime, store.swap_options("a"));
  SwapRequest request;
  request.name = "b";
  probe.swap(request);
  realtime::Report report;
  report.add(realtime::prefault_served(probe.resident()));
  report.add(realtime::set_fifo(1000));
  CHECK(report.steps[0].done);
  CHECK(test::contains(report.steps[0].detail, "2 versions, "));
  CHECK_FALSE(report.all_done());
  CHECK(report.summary() == "prefault the served tables: done (" + report.steps[0].detail +
                                "); SCHED_FIFO 1000: refused: " + report.steps[1].detail);
}
