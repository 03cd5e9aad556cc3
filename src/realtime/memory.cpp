// Memory of a control thread: locked (mlockall) and touched before the loop, so that no cycle
// takes a page fault.
#include <alloca.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>

#include <kiln/realtime.hpp>
#include <kiln/swap.hpp>

#include "realtime/refusal.hpp"

namespace kiln::realtime {

namespace {

std::size_t page_size() noexcept { return static_cast<std::size_t>(::sysconf(_SC_PAGESIZE)); }

std::string bytes_and_pages(std::size_t bytes, std::size_t pages) {
  return std::to_string(bytes) + " bytes, " + std::to_string(pages) + (pages == 1 ? " page" : " pages");
}

// Writes one byte of every page of `bytes` of stack below the caller's frame (alloca: the pages
// a deeper call of the loop will use). Not inlined, so the space is freed on return.
__attribute__((noinline)) std::size_t touch_stack(std::size_t bytes, std::size_t page) noexcept {
  auto *area = static_cast<volatile unsigned char *>(alloca(bytes));
  std::size_t pages = 0;
  for (std::size_t offset = bytes; offset > 0;) {  // the highest page first: the way a stack grows
    offset = offset > page ? offset - page : 0;
    area[offset] = 0;
    ++pages;
  }
  return pages;
}

// Reads one byte of every page of [data, data + bytes): read only, a table is read-only memory.
std::size_t touch_pages(const void *data, std::size_t bytes) noexcept {
  if (data == nullptr || bytes == 0) return 0;
  const std::uintptr_t page = page_size();
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  std::size_t pages = 0;
  for (std::uintptr_t p = begin & ~(page - 1); p < begin + bytes; p += page) {
    (void)*reinterpret_cast<const volatile unsigned char *>(p < begin ? begin : p);  // not before `data`
    ++pages;
  }
  return pages;
}

// VmLck of /proc/self/status, kB; -1 when unknown.
long locked_kb() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("VmLck:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

}  // namespace

Step lock_memory() {
  const std::string what = "mlockall(MCL_CURRENT | MCL_FUTURE)";
  if (::mlockall(MCL_CURRENT | MCL_FUTURE) == 0) {
    // Believed only when the kernel counts locked memory: a sanitizer's runtime answers 0 and
    // locks nothing (its shadow mappings are terabytes).
    const long locked = locked_kb();
    if (locked > 0) return detail::done(what, std::to_string(locked) + " kB locked");
    return detail::refused(what, ENOTSUP, "it returned success but /proc/self/status shows nothing locked: "
                                          "an interposed mlockall (a sanitizer's runtime) ignored it");
  }
  const int error = errno;
  struct rlimit limit {};
  std::string fix = "needs CAP_IPC_LOCK or an RLIMIT_MEMLOCK above the process's size";
  if (::getrlimit(RLIMIT_MEMLOCK, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    fix += "; RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur / 1024) + " KiB (ulimit -l, limits.conf memlock)";
  }
  return detail::refused(what, error, fix);
}

Step prefault_stack(std::size_t bytes) {
  const std::string what = "prefault " + std::to_string(bytes) + " bytes of stack";
  pthread_attr_t attr;
  if (::pthread_getattr_np(::pthread_self(), &attr) != 0) return detail::refused(what, ENOTSUP, "the stack's bounds are unknown");
  void *stack_low = nullptr;
  std::size_t stack_size = 0;
  const int got = ::pthread_attr_getstack(&attr, &stack_low, &stack_size);
  ::pthread_attr_destroy(&attr);
  if (got != 0) return detail::refused(what, got, "the stack's bounds are unknown");
  // The frame's address, not a local's: under a sanitizer a local may live on a fake stack.
  const auto top = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  const auto low_end = reinterpret_cast<std::uintptr_t>(stack_low);
  constexpr std::size_t kMargin = 16 * 1024;  // this function's frame, signal delivery
  const std::size_t available = top > low_end ? static_cast<std::size_t>(top - low_end) : 0;
  if (bytes + kMargin > available) {
    return detail::refused(what, ENOMEM,
                           "the thread's stack has " + std::to_string(available) + " bytes below this frame; keep " +
                               std::to_string(kMargin) + " free or give the thread a larger stack");
  }
  const std::size_t pages = touch_stack(bytes, page_size());
  return detail::done(what, bytes_and_pages(bytes, pages));
}

Step prefault(const void *data, std::size_t bytes) {
  return detail::done("prefault " + std::to_string(bytes) + " bytes", bytes_and_pages(bytes, touch_pages(data, bytes)));
}

Step prefault_served(const std::vector<ServedVersion> &resident) {
  std::size_t pages = 0;
  for (const auto &version : resident) {
    // A table's size is its interface's; its first member is struct_size in every kiln interface.
    const auto *size = static_cast<const std::uint32_t *>(version.table);
    const std::size_t table_bytes = size != nullptr ? *size : 0;
    pages += touch_pages(version.table, table_bytes);
  }
  return detail::done("prefault the served tables",
                      std::to_string(resident.size()) + (resident.size() == 1 ? " version, " : " versions, ") +
                          std::to_string(pages) + (pages == 1 ? " page" : " pages"));
}

}  // namespace kiln::realtime
