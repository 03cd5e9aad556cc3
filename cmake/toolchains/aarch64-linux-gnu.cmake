# kiln for aarch64 (Jetson: Orin, Thor) from an x86 Debian machine, with Debian's cross compiler
# (g++-aarch64-linux-gnu) and the arm64 multiarch packages (dpkg --add-architecture arm64; the
# -dev packages kiln needs, :arm64; scripts/install-deps --aarch64 installs them):
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#
# What it builds: the library, the CLI, the unit tests and the host-code test plugins. Device
# code is not built for aarch64 here (this machine's CUDA toolkit has x86 host libraries only):
# KILN_CUDA is OFF, and the artifacts a Jetson runs come from an x86 workstation as bundles.
# Test binaries run under qemu-aarch64-static (CMAKE_CROSSCOMPILING_EMULATOR; the tests run the
# CLI through it too).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Debian multiarch: arm64 libraries and CMake/pkg-config files under /usr/lib/aarch64-linux-gnu,
# headers (shared by every arch) under /usr/include.
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L /usr/aarch64-linux-gnu)
set(KILN_CUDA OFF CACHE BOOL "Build CUDA device code (no aarch64 CUDA host libraries on this machine)")
set(KILN_BUILD_PLUGINS OFF CACHE BOOL "Build the plugins (needs nvcc for aarch64)")
set(KILN_BUILD_BENCH OFF CACHE BOOL "Build the benchmarks")
