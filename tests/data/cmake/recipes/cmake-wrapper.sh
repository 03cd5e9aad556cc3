#!/bin/sh
# Counts cmake invocations for the cmake backend tests (KILN_CMAKE points here), then runs the real cmake.
echo "$*" >> "${KILN_TEST_CMAKE_LOG:-/dev/null}"
exec "${KILN_TEST_REAL_CMAKE:-cmake}" "$@"
