#!/usr/bin/env bash
# All peers' rows, one after the other on the same GPU: run_grid.sh, run_gato.sh, run_hjcd.sh.
#   run_all.sh DIR      (results: DIR/results/{grid,gato,hjcd}.jsonl, logs: DIR/logs/)
set -euo pipefail
DIR="$(cd "${1:?usage: run_all.sh DIR}" && pwd)"
. "$DIR/common.sh"
mkdir -p "$DIR/logs"
status=0
for peer in grid gato hjcd; do
  if ! bash "$DIR/run_$peer.sh" "$DIR" 2> "$DIR/logs/run_$peer.err"; then
    note "run_$peer.sh failed (stderr: $DIR/logs/run_$peer.err)"; tail -5 "$DIR/logs/run_$peer.err" >&2; status=1
  fi
done
exit $status
