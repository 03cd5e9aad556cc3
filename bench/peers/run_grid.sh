#!/usr/bin/env bash
# RNEA, GRiD: kiln's iiwa14 states file (if found) and seeded batches, fp32 and fp64, kernel-only and
# with transfers; one JSON line per row on stdout and in DIR/results/grid.jsonl; torques in DIR/results/.
#   run_grid.sh DIR [--states FILE] [--batches "1000 10000 100000 1000000"] [--threads "32 64 128"]
#                   [--runs 50] [--warmups 5] [--seed 20261202] [--dump-max 10000]
# Torques are written for kiln's states file and for seeded batches of at most --dump-max states
# (1M states would be 224 MB a file); larger batches are timed only.
set -euo pipefail
DIR="$(cd "${1:?usage: run_grid.sh DIR [options]}" && pwd)"; shift
. "$DIR/common.sh"
STATES="" BATCHES="1000 10000 100000 1000000" THREADS="32 64 128" RUNS=50 WARMUPS=5 SEED=20261202 DUMP_MAX=10000
while [ $# -gt 0 ]; do
  case "$1" in
    --states) STATES="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --threads) THREADS="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --warmups) WARMUPS="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --dump-max) DUMP_MAX="$2"; shift 2 ;;
    *) die "run_grid.sh: unknown argument '$1'" ;;
  esac
done
if [ -z "$STATES" ] && [ -f "$DIR/data/rnea_kdl_iiwa14.bin" ]; then STATES="$DIR/data/rnea_kdl_iiwa14.bin"; fi
COMMIT="$(awk '$1 == "grid" { print $2 }' "$DIR/COMMITS")"
mkdir -p "$DIR/results"
URDF="$DIR/urdf/iiwa14_kiln.urdf"
# lo:hi:vel:acc per movable joint, in file order, as kiln's rnea_kdl_states.cpp draws them
# (q within <limit lower upper>, qd within +-velocity, qdd within +-10 rad/s^2).
RANGES="$(grep -o '<limit[^>]*>' "$URDF" | awk '{
  lo = hi = vel = ""; for (i = 1; i <= NF; ++i) { split($i, kv, "\""); k = kv[1]; v = kv[2];
    if (k == "lower=") lo = v; else if (k == "upper=") hi = v; else if (k == "velocity=") vel = v }
  printf "%s%s:%s:%s:10", (NR > 1 ? "," : ""), lo, hi, (vel == "" || vel + 0 <= 0 ? 2 : vel) }')"
for p in fp32 fp64; do
  BIN="$DIR/bin/grid_rnea_iiwa14_kiln_$p"
  [ -x "$BIN" ] || die "$BIN is missing: run compile_peers.sh $DIR (or build_all.sh) first"
  for t in $THREADS; do
    if [ -n "$STATES" ]; then
      "$BIN" --states "$STATES" --threads "$t" --runs "$RUNS" --warmups "$WARMUPS" --commit "$COMMIT" \
        --robot iiwa14 --urdf iiwa14.urdf $( [ "$t" = "${THREADS%% *}" ] && echo --out "$DIR/results/grid_tau_iiwa14_kdlstates_${p}.bin" ) | tee -a "$DIR/results/grid.jsonl"
    fi
    for n in $BATCHES; do
      "$BIN" --batch "$n" --seed "$SEED" --ranges "$RANGES" --threads "$t" --runs "$RUNS" --warmups "$WARMUPS" \
        --commit "$COMMIT" --robot iiwa14 --urdf iiwa14.urdf \
        $( [ "$t" = "${THREADS%% *}" ] && [ "$n" -le "$DUMP_MAX" ] && echo --out "$DIR/results/grid_tau_iiwa14_seed${SEED}_n${n}_${p}.bin" ) \
        | tee -a "$DIR/results/grid.jsonl"
    done
  done
done
