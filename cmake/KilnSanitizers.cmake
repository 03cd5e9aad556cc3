# Sanitizer and fuzzing builds of kiln's own code (library, CLI, tests, test plugins).
#
#   -DKILN_SANITIZE=address,undefined   ASan + UBSan (UBSan findings abort: -fno-sanitize-recover)
#   -DKILN_SANITIZE=thread              TSan
#   -DKILN_BUILD_FUZZ=ON                libFuzzer targets (fuzz/); needs clang. Implies
#                                       KILN_SANITIZE=address,undefined unless set otherwise.
#   -DKILN_LINE_TABLES_ONLY=ON          C and C++ with line tables only (-g1): what a sanitizer
#                                       report, a fuzz finding or a backtrace names, at about two
#                                       thirds of the compile time of full debug information
#                                       (scripts/test's checking trees)
#
# KILN_SANITIZE is used with g++ (scripts/test's asan and tsan trees: g++ links the shared
# sanitizer runtime, which plugins linked with --no-undefined need) and with clang in the fuzz
# tree (no plugins). Use a separate build tree per setting, without the IK plugin and the benches
# (-DKILN_BUILD_PLUGINS=OFF -DKILN_BUILD_BENCH=OFF): they are not what the sanitizers check and
# the IK plugin is slow to compile. scripts/test and scripts/fuzz configure these trees.
#
# The flags are applied to everything this project compiles and links (every target below the
# top-level CMakeLists.txt is kiln's own); prebuilt Debian libraries (static Boost) and libraries
# kiln dlopens (libcuda, NVRTC) are not instrumented. nvcc's host compiler gets them through
# -Xcompiler, so the nvcc-built test plugin is instrumented as well.
include_guard(GLOBAL)

set(KILN_SANITIZE "" CACHE STRING
    "Sanitizers for kiln's own targets: empty, address,undefined (or a subset), or thread")

if(KILN_BUILD_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "KILN_BUILD_FUZZ needs clang (libFuzzer); configure with "
                        "-DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_C_COMPILER=clang-14 (scripts/fuzz does)")
  endif()
  if(KILN_BUILD_TESTS OR KILN_BUILD_PLUGINS OR KILN_BUILD_BENCH)
    # A fuzz tree is the library and the fuzz targets: the tests and plugins are built by g++
    # and nvcc in their own trees (scripts/test), not with libFuzzer's coverage flags.
    message(FATAL_ERROR "KILN_BUILD_FUZZ builds only the library and fuzz/: configure with "
                        "-DKILN_BUILD_TESTS=OFF -DKILN_BUILD_PLUGINS=OFF -DKILN_BUILD_BENCH=OFF (scripts/fuzz does)")
  endif()
  if(NOT KILN_SANITIZE)
    set(KILN_SANITIZE "address,undefined" CACHE STRING "" FORCE)
  endif()
endif()

if(KILN_SANITIZE)
  string(REPLACE "," ";" _kiln_sanitizers "${KILN_SANITIZE}")
  foreach(_s IN LISTS _kiln_sanitizers)
    if(NOT _s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "KILN_SANITIZE: unknown sanitizer '${_s}' (use address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _kiln_sanitizers AND ("address" IN_LIST _kiln_sanitizers OR "leak" IN_LIST _kiln_sanitizers))
    message(FATAL_ERROR "KILN_SANITIZE: thread cannot be combined with address/leak; use two build trees")
  endif()

  set(_kiln_sanitize_flags "-fsanitize=${KILN_SANITIZE}" -fno-omit-frame-pointer)
  if("undefined" IN_LIST _kiln_sanitizers)
    # A UBSan report is a failure, not a line in a log: the process stops with a non-zero status.
    list(APPEND _kiln_sanitize_flags -fno-sanitize-recover=undefined)
  endif()
  set(_kiln_sanitize_compile ${_kiln_sanitize_flags})
  if(KILN_BUILD_FUZZ)
    # Coverage feedback for libFuzzer from the library itself, not only from the fuzz targets.
    list(APPEND _kiln_sanitize_compile -fsanitize=fuzzer-no-link)
  endif()
  # -Xcompiler splits its value at commas: one -fsanitize= per sanitizer for nvcc's host compiler.
  set(_kiln_xcompiler "")
  foreach(_s IN LISTS _kiln_sanitizers)
    string(APPEND _kiln_xcompiler "-fsanitize=${_s},")
  endforeach()
  list(REMOVE_ITEM _kiln_sanitize_flags "-fsanitize=${KILN_SANITIZE}")
  list(JOIN _kiln_sanitize_flags "," _kiln_rest)
  string(APPEND _kiln_xcompiler "${_kiln_rest}")
  list(PREPEND _kiln_sanitize_flags "-fsanitize=${KILN_SANITIZE}")

  # Which targets get them: all, except plugins (MODULE libraries) under TSan. libtsan exports
  # its own atexit, which drops the caller's DSO handle; a plugin linked against it binds
  # atexit there instead of to libc_nonshared's, so an atexit handler of a plugin (cudart_static
  # registers one) outlives the plugin's dlclose and the process jumps into unmapped code at
  # exit (SEGV in every process that loaded and unloaded the nvcc-built test plugin). An
  # uninstrumented plugin in a TSan host is supported (TSan just does not see inside it); the
  # concurrency suite checks kiln's own code. ASan exports no atexit: there plugins are instrumented.
  set(_kiln_target_gets "1")
  if("thread" IN_LIST _kiln_sanitizers)
    set(_kiln_target_gets "$<NOT:$<STREQUAL:$<TARGET_PROPERTY:TYPE>,MODULE_LIBRARY>>")
  endif()
  add_compile_options(
    "$<$<AND:${_kiln_target_gets},$<COMPILE_LANGUAGE:C,CXX>>:${_kiln_sanitize_compile}>"
    "$<$<AND:${_kiln_target_gets},$<COMPILE_LANGUAGE:CUDA>>:-Xcompiler=${_kiln_xcompiler}>")
  add_link_options("$<${_kiln_target_gets}:${_kiln_sanitize_flags}>")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12's flow analysis changes under instrumentation and warns about libstdc++'s own
    # <regex> and <functional> internals (-Wmaybe-uninitialized false positives); the normal
    # build keeps the warning.
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-Wno-maybe-uninitialized>")
  endif()
  message(STATUS "kiln: sanitizers ${KILN_SANITIZE} for kiln's own targets")
  unset(_kiln_sanitizers)
  unset(_kiln_sanitize_flags)
  unset(_kiln_sanitize_compile)
  unset(_kiln_xcompiler)
  unset(_kiln_rest)
  unset(_kiln_target_gets)
endif()

option(KILN_LINE_TABLES_ONLY "Compile C and C++ with line tables only (-g1)" OFF)
if(KILN_LINE_TABLES_ONLY)
  # After CMAKE_<LANG>_FLAGS_<CONFIG> on the command line, so it overrides their -g.
  add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:-g1>)
endif()
