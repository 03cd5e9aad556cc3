#!/usr/bin/env bash
# On the GPU machine: compiles the prepared peers (this folder, as build_all.sh --no-compile wrote
# it) and runs all their rows back to back, writing logs and JSON lines to $OUT.
#   OUT=/some/dir bash run_on_gpu.sh [--only grid|gato|hjcd] [--quick]
# --quick: fewer rows (GRiD batches 1000 100000, threads 64; GATO N 64, B 1 16; HJCD-IK B 1 1000).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
[ -n "${OUT:-}" ] || { echo "run_on_gpu.sh: set OUT to the folder that receives logs and results" >&2; exit 1; }
ONLY="" QUICK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --quick) QUICK=1; shift ;;
    *) echo "run_on_gpu.sh: unknown argument '$1'" >&2; exit 1 ;;
  esac
done
mkdir -p "$OUT"
WORK="${PEERS_WORK:-/tmp/kiln-peers}"
rm -rf "$WORK" && mkdir -p "$WORK" && cp -r "$HERE/." "$WORK/"
rm -rf "$WORK/bin" "$WORK/results" "$WORK/logs"
{
  echo "== device"; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || true
  echo "== nvcc"; (nvcc --version 2>/dev/null || /usr/local/cuda/bin/nvcc --version) | tail -2
  echo "== commits"; cat "$WORK/COMMITS"
} | tee "$OUT/env.txt"
if [ "$QUICK" = 1 ]; then export GATO_KNOTS="64" GATO_BATCHES="1 16"; fi
t0=$(date +%s)
bash "$WORK/compile_peers.sh" "$WORK" ${ONLY:+--only "$ONLY"} 2>&1 | tee "$OUT/compile.log"
echo "compile wall time: $(( $(date +%s) - t0 )) s" | tee -a "$OUT/compile.log"
status=0
run() {  # run PEER ARGS...
  local peer="$1"; shift
  [ -z "$ONLY" ] || [ "$ONLY" = "$peer" ] || return 0
  local t=$(date +%s)
  if ! bash "$WORK/run_$peer.sh" "$WORK" "$@" 2> "$OUT/run_$peer.err"; then
    echo "run_$peer.sh failed; last lines of $OUT/run_$peer.err:" >&2; tail -5 "$OUT/run_$peer.err" >&2; status=1
  fi
  echo "run_$peer wall time: $(( $(date +%s) - t )) s" >&2
}
if [ "$QUICK" = 1 ]; then
  run grid --batches "1000 100000" --threads 64 --runs 20
  run gato --knots 64 --batches "1 16" --steps 100
  run hjcd --batches "1 1000" --random 20
else
  run grid
  run gato
  run hjcd
fi
mkdir -p "$OUT/results" "$OUT/logs"
cp -r "$WORK/results/." "$OUT/results/" 2> /dev/null || true
cp -r "$WORK/logs/." "$OUT/logs/" 2> /dev/null || true
echo "results: $OUT/results/{grid,gato,hjcd}.jsonl"
exit $status
