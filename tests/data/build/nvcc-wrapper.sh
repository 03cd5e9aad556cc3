#!/bin/sh
# Counts nvcc invocations for the build tests (KILN_NVCC points here), then runs the real nvcc.
echo "$*" >> "${KILN_TEST_NVCC_LOG:-/dev/null}"
# Compiles only: the toolchain probe (--version) stays fast.
if [ -n "${KILN_TEST_NVCC_DELAY:-}" ] && [ "$1" = "-c" ]; then sleep "$KILN_TEST_NVCC_DELAY"; fi
exec "${KILN_TEST_REAL_NVCC:-/usr/local/cuda/bin/nvcc}" "$@"
