// Heap calls of the calling thread, counted by the malloc family this program defines
// (count_allocations.cpp): glibc's own functions and every library's calls (operator new in
// libstdc++, strdup, fopen in glibc) reach them, since a program's definitions of malloc,
// free, ... replace glibc's for the whole process.
#pragma once

#include <cstdint>

namespace kiln::test::rt {

struct HeapCalls {
  std::uint64_t allocations = 0;  // malloc, calloc, realloc, the aligned ones, valloc
  std::uint64_t frees = 0;        // free of a non-null pointer, realloc to 0 bytes
};

// This thread's counts since it started. Reads thread-local memory only: no call, no allocation.
HeapCalls heap_calls() noexcept;

// False where the counting allocator is not this process's (a sanitizer's runtime defines the
// malloc family itself): heap_calls() then stays 0 and says nothing.
bool heap_calls_counted() noexcept;

}  // namespace kiln::test::rt
