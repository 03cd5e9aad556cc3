#!/bin/sh
# Generator of the cmake test recipes: gen_values.h from the first line of $1, into $2 ({gen});
# each run is counted in $KILN_TEST_GEN_LOG.
echo run >> "${KILN_TEST_GEN_LOG:-/dev/null}"
printf '#pragma once\n#define GEN_VALUE %s\n' "$(head -n 1 "$1")" > "$2/gen_values.h"
