#!/usr/bin/env bash
# TrajOpt, GATO: closed-loop figure-8 end-effector tracking MPC (iiwa14, GATO's model), for each
# horizon N and batch B compiled; one JSON line per row on stdout and in DIR/results/gato.jsonl.
#   run_gato.sh DIR [--knots "32 64 128"] [--batches "1 16 64 256 1024"] [--steps 300] [--dt 0.01]
#                   [-- extra harness arguments, e.g. --max-sqp-iters 5]
set -euo pipefail
DIR="$(cd "${1:?usage: run_gato.sh DIR [options]}" && pwd)"; shift
. "$DIR/common.sh"
KNOTS="32 64 128" BATCHES="1 16 64 256 1024" STEPS=300 DT=0.01 EXTRA=()
while [ $# -gt 0 ]; do
  case "$1" in
    --knots) KNOTS="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --dt) DT="$2"; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) die "run_gato.sh: unknown argument '$1'" ;;
  esac
done
COMMIT="$(awk '$1 == "gato" { print $2 }' "$DIR/COMMITS")"
mkdir -p "$DIR/results"
for n in $KNOTS; do
  for b in $BATCHES; do
    BIN="$DIR/bin/gato_mpc_N${n}_B${b}"
    [ -x "$BIN" ] || die "$BIN is missing: compile it (GATO_KNOTS=\"$n\" GATO_BATCHES=\"$b\" compile_peers.sh $DIR --only gato)"
    "$BIN" --steps "$STEPS" --dt "$DT" --commit "$COMMIT" --traj "$DIR/results/gato_traj_N${n}_B${b}.csv" \
      ${EXTRA[@]+"${EXTRA[@]}"} | tee -a "$DIR/results/gato.jsonl"
  done
done
