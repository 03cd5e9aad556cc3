#!/usr/bin/env bash
# Prepares (copy, fix, generate headers where needed) and compiles grid only:
#   bench/peers/build_grid.sh --grid PATH --out DIR [--headers DIR] [--no-compile]   (see build_all.sh --help)
set -euo pipefail
exec bash "$(dirname "$0")/build_all.sh" --only grid "$@"
