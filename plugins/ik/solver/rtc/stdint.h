/* kiln IK plugin, NVRTC only: NVRTC has no C or C++ standard headers and kiln hands it only the
 * headers a recipe declares (by content, never from an include directory). These shims stand in
 * for the few the solver's headers include (<stdint.h>, <stddef.h>, <cmath>, <cstddef>); NVRTC
 * itself provides size_t and the math functions. Declared only by the split form's kernels recipe
 * (recipes/iiwa14-split-kernels.json.in, include_dir solver/rtc). Device targets are LP64. */
#pragma once
#if !defined(__CUDACC_RTC__)
#error "solver/rtc/stdint.h is for NVRTC only: put solver/rtc on no other include path"
#endif
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long long uintptr_t;
#define UINT32_MAX 0xffffffffu
#define INT32_MAX 0x7fffffff
