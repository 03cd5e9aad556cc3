/* kiln IK plugin, NVRTC only: see rtc/stdint.h. NVRTC defines size_t and ptrdiff_t itself. */
#pragma once
#if !defined(__CUDACC_RTC__)
#error "solver/rtc/stddef.h is for NVRTC only: put solver/rtc on no other include path"
#endif
#ifndef NULL
#define NULL 0
#endif
