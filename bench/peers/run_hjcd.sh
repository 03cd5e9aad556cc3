#!/usr/bin/env bash
# IK, HJCD-IK: Panda (arm) and iiwa14, kiln's URDFs, for each batch (parallel seeds per target);
# targets from kiln's files (7 float32 x y z qw qx qy qz each) or HJCD-IK's own sampler.
# One JSON line per row on stdout and in DIR/results/hjcd.jsonl; joint answers in DIR/results/.
#   run_hjcd.sh DIR [--targets-panda FILE] [--targets-iiwa14 FILE] [--random 100] [--seed 0]
#                   [--batches "1 100 1000 10000"] [--warmups 3]
set -euo pipefail
DIR="$(cd "${1:?usage: run_hjcd.sh DIR [options]}" && pwd)"; shift
. "$DIR/common.sh"
TP="" TI="" RANDOM_N=100 SEED=0 BATCHES="1 100 1000 10000" WARMUPS=3
while [ $# -gt 0 ]; do
  case "$1" in
    --targets-panda) TP="$2"; shift 2 ;;
    --targets-iiwa14) TI="$2"; shift 2 ;;
    --random) RANDOM_N="$2"; shift 2 ;;
    --seed) SEED="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --warmups) WARMUPS="$2"; shift 2 ;;
    *) die "run_hjcd.sh: unknown argument '$1'" ;;
  esac
done
[ -n "$TP" ] || { [ -f "$DIR/data/ik_targets_panda.bin" ] && TP="$DIR/data/ik_targets_panda.bin"; } || true
[ -n "$TI" ] || { [ -f "$DIR/data/ik_targets_iiwa14.bin" ] && TI="$DIR/data/ik_targets_iiwa14.bin"; } || true
COMMIT="$(awk '$1 == "hjcd" { print $2 }' "$DIR/COMMITS")"
mkdir -p "$DIR/results"
# Each robot twice: HJCD-IK's own refinement (1e-8 m / 1e-8 rad), and stopping at kiln's 1 mm / 0.01 rad
# (robot name suffixed _kiln_tolerances).
for r in panda_kiln_arm iiwa14_kiln; do
  case "$r" in panda*) T="$TP" ;; *) T="$TI" ;; esac
  for variant in "" _kiln_tolerances; do
    BIN="$DIR/bin/hjcd_ik_$r$variant"
    [ -x "$BIN" ] || die "$BIN is missing: run compile_peers.sh $DIR --only hjcd"
    for b in $BATCHES; do
      if [ -n "$T" ]; then SRC=(--targets "$T"); else SRC=(--random "$RANDOM_N" --seed "$SEED"); fi
      "$BIN" "${SRC[@]}" --batch "$b" --warmups "$WARMUPS" --commit "$COMMIT" --robot "$r$variant" \
        --out "$DIR/results/hjcd_q_$r${variant}_B${b}.bin" | tee -a "$DIR/results/hjcd.jsonl"
    done
  done
done
