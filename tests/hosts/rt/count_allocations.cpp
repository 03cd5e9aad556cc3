// The malloc family of this program: each call counts on the calling thread, then goes to glibc's
// allocator (its __libc_* entry points), so the heap is glibc's as usual. glibc documents
// replacing malloc by defining these in the program ("Replacing malloc" in its manual): every
// caller, glibc itself included, then calls these.
#include "rt/count_allocations.hpp"

#include <cerrno>
#include <cstddef>
#include <cstdint>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KILN_RT_COUNTS 0  // the sanitizer's runtime defines the malloc family
#else
#define KILN_RT_COUNTS 1
#endif

namespace kiln::test::rt {
namespace {
// initial-exec: static TLS of the program, reached without a call (a lazily allocated TLS block
// would itself allocate on a thread's first heap call).
__thread __attribute__((tls_model("initial-exec"))) std::uint64_t allocations = 0;
__thread __attribute__((tls_model("initial-exec"))) std::uint64_t frees = 0;
}  // namespace

HeapCalls heap_calls() noexcept { return {allocations, frees}; }
bool heap_calls_counted() noexcept { return KILN_RT_COUNTS != 0; }

}  // namespace kiln::test::rt

#if KILN_RT_COUNTS
using kiln::test::rt::allocations;
using kiln::test::rt::frees;

extern "C" {
void *__libc_malloc(std::size_t size);
void __libc_free(void *pointer);
void *__libc_calloc(std::size_t count, std::size_t size);
void *__libc_realloc(void *pointer, std::size_t size);
void *__libc_memalign(std::size_t alignment, std::size_t size);
void *__libc_valloc(std::size_t size);
void *__libc_pvalloc(std::size_t size);

void *malloc(std::size_t size) {
  ++allocations;
  return __libc_malloc(size);
}

void free(void *pointer) {
  if (pointer != nullptr) ++frees;
  __libc_free(pointer);
}

void *calloc(std::size_t count, std::size_t size) {
  ++allocations;
  return __libc_calloc(count, size);
}

void *realloc(void *pointer, std::size_t size) {
  if (pointer != nullptr && size == 0) {
    ++frees;
  } else {
    ++allocations;
  }
  return __libc_realloc(pointer, size);
}

void *reallocarray(void *pointer, std::size_t count, std::size_t size) {
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(count, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(pointer, bytes);
}

void *memalign(std::size_t alignment, std::size_t size) {
  ++allocations;
  return __libc_memalign(alignment, size);
}

void *aligned_alloc(std::size_t alignment, std::size_t size) {
  ++allocations;
  return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, std::size_t alignment, std::size_t size) {
  ++allocations;
  if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void *pointer = __libc_memalign(alignment, size);
  if (pointer == nullptr) return ENOMEM;
  *out = pointer;
  return 0;
}

void *valloc(std::size_t size) {
  ++allocations;
  return __libc_valloc(size);
}

void *pvalloc(std::size_t size) {
  ++allocations;
  return __libc_pvalloc(size);
}
}  // extern "C"
#endif
