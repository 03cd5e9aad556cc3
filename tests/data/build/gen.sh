#!/bin/sh
# Test generator: writes GEN_VALUE (the first line of the input) into a header.
set -eu
value=$(head -n 1 "$1")
printf '#pragma once\n#define GEN_VALUE %s\n' "$value" > "$2/gen_values.h"
