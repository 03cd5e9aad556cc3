# Every dependency comes from a Debian package (see README "Dependencies").
# A shared libkiln links the shared Boost: Debian's libboost_*.a is not position-independent.
if(KILN_STATIC_BOOST AND NOT KILN_SHARED)
  set(Boost_USE_STATIC_LIBS ON)
endif()
find_package(Boost 1.74 REQUIRED COMPONENTS filesystem)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(Threads REQUIRED)

# xxHash is used header-only (XXH_INLINE_ALL): no libxxhash.so is needed where kiln runs.
find_path(XXHASH_INCLUDE_DIR xxhash.h REQUIRED)
add_library(kiln_xxhash INTERFACE)
target_include_directories(kiln_xxhash SYSTEM INTERFACE ${XXHASH_INCLUDE_DIR})

# The CUDA driver API header only: libcuda.so.1 is opened with dlopen at run time, never linked.
find_path(KILN_CUDA_INCLUDE_DIR cuda.h
  HINTS $ENV{CUDA_HOME}/include $ENV{CUDA_PATH}/include /usr/local/cuda/include REQUIRED)
add_library(kiln_cuda_headers INTERFACE)
target_include_directories(kiln_cuda_headers SYSTEM INTERFACE ${KILN_CUDA_INCLUDE_DIR})

# Bundles (kiln export / import, src/bundle): libarchive writes and reads the tar container,
# libsodium signs it (Ed25519) and hashes every member (BLAKE2b).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBARCHIVE REQUIRED IMPORTED_TARGET libarchive)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
# Remote caches (src/remote): libcurl for HTTP(S) servers, hiredis for Redis -- linked by
# the remote backends' module only (libkiln-remote.so, loaded on a build's first remote use), so
# that a process loading plugins never maps them.
pkg_check_modules(LIBCURL REQUIRED IMPORTED_TARGET libcurl)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
# Optional, for tests and the swap bench only: a seccomp filter on a control thread
# (tests/hosts/rt). Without it the test that uses it is skipped, saying so.
pkg_check_modules(LIBSECCOMP IMPORTED_TARGET libseccomp)
