#!/usr/bin/env bash
# Prepares (copy, fix, generate headers where needed) and compiles hjcd only:
#   bench/peers/build_hjcd.sh --hjcd PATH --out DIR [--headers DIR] [--no-compile]   (see build_all.sh --help)
set -euo pipefail
exec bash "$(dirname "$0")/build_all.sh" --only hjcd "$@"
