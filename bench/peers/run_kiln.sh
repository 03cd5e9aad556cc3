#!/usr/bin/env bash
# kiln's rows beside the peers', on the same GPU and the same problems (equal work):
#   TrajOpt on GATO's robot model and figure-8 problem: kiln_bench_mpc with DIR/kiln/
#     libkiln_trajopt_iiwa14_gato_N<N>.so (build_kiln_models.sh), from the start given (--start:
#     zero, q = 0 at rest as GATO's benchmark; or Q1,...,Q7 at rest, the same given to
#     run_gato.sh -- --start-q), the last knot weighted as GATO's terminal cost, one
#     Levenberg-Marquardt step per MPC step (GATO: one SQP iteration), B identical problems per
#     step; -> DIR/results/kiln_trajopt.jsonl
#   IK on the targets HJCD-IK solves (DIR/data/ik_targets_<robot>.bin): kiln_bench_ik_peers solve
#     with DIR/kiln/ik_<robot>.so (a kiln IK plugin whose tip is HJCD-IK's end effector), B
#     targets per call, at kiln's tolerances and at the tightest float reaches; answers in
#     DIR/results/kiln_q_<robot>_<tolerance>_B<B>.bin, rows in DIR/results/kiln_ik.jsonl.
# Judge the IK answers afterwards, on any machine: judge_ik.sh DIR KILN_BENCH_DIR.
#   run_kiln.sh DIR KILN_BENCH_DIR [--knots "32 64 128"] [--batches "1 16 64 256 1024"] [--steps 300]
#               [--ik-batches "1 100 1000"] [--start zero|Q1,...,Q7] [--only trajopt|ik]
# KILN_BENCH_DIR: a kiln build's bench/ (kiln_bench_mpc, kiln_bench_ik_peers).
set -euo pipefail
DIR="$(cd "${1:?usage: run_kiln.sh DIR KILN_BENCH_DIR [options]}" && pwd)"
BENCH="$(cd "${2:?usage: run_kiln.sh DIR KILN_BENCH_DIR [options]}" && pwd)"; shift 2
. "$DIR/common.sh"
KNOTS="32 64 128" BATCHES="1 16 64 256 1024" STEPS=300 IK_BATCHES="1 100 1000" ONLY="" START=zero
while [ $# -gt 0 ]; do
  case "$1" in
    --knots) KNOTS="$2"; shift 2 ;;
    --batches) BATCHES="$2"; shift 2 ;;
    --steps) STEPS="$2"; shift 2 ;;
    --ik-batches) IK_BATCHES="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --start) START="$2"; shift 2 ;;
    *) die "run_kiln.sh: unknown argument '$1'" ;;
  esac
done
mkdir -p "$DIR/results"
if [ -z "$ONLY" ] || [ "$ONLY" = trajopt ]; then
  for n in $KNOTS; do
    P="$DIR/kiln/libkiln_trajopt_iiwa14_gato_N$n.so"
    [ -f "$P" ] || die "$P is missing: build_kiln_models.sh KILN_BUILD $DIR/urdf/iiwa14_gato.urdf iiwa_base L7 iiwa14_gato $DIR/kiln"
    for b in $BATCHES; do
      "$BENCH/kiln_bench_mpc" --plugin "$P" --batch "$b" --start "$START" --last-knot-weight 5 --ticks "$STEPS" \
        --budgets 1 --no-cold --no-ik --json | grep '^{' | tee -a "$DIR/results/kiln_trajopt.jsonl"
    done
  done
fi
if [ -z "$ONLY" ] || [ "$ONLY" = ik ]; then
  for r in iiwa14 panda; do
    T="$DIR/data/ik_targets_$r.bin"
    [ -f "$T" ] || die "$T is missing: kiln_bench_ik_peers targets --plugin $DIR/kiln/ik_$r.so --count 1000 --out $T"
    # kiln's tolerances (1 mm, 0.01 rad) and the tightest its float solve reaches reliably (0.01 mm, 1e-4 rad).
    for tol in "1e-3 1e-2 kiln" "1e-5 1e-4 tight"; do
      set -- $tol
      for b in $IK_BATCHES; do
        "$BENCH/kiln_bench_ik_peers" solve --plugin "$DIR/kiln/ik_$r.so" --targets "$T" --batch "$b" \
          --position-tolerance "$1" --orientation-tolerance "$2" --out "$DIR/results/kiln_q_${r}_$3_B$b.bin" |
          tee -a "$DIR/results/kiln_ik.jsonl"
      done
    done
  done
fi
