#!/usr/bin/env bash
# Every IK answer in DIR/results (HJCD-IK's hjcd_q_*.bin, kiln's kiln_q_*.bin) judged by one
# double-precision FK, kiln's model of each robot (DIR/kiln/ik_<robot>.so, kiln.robotmodel/1), on
# the targets both solved; one JSON line per answers file in DIR/results/ik_judged.jsonl.
#   judge_ik.sh DIR KILN_BENCH_DIR
set -euo pipefail
DIR="$(cd "${1:?usage: judge_ik.sh DIR KILN_BENCH_DIR}" && pwd)"
BENCH="$(cd "${2:?usage: judge_ik.sh DIR KILN_BENCH_DIR}" && pwd)"
. "$DIR/common.sh"
: > "$DIR/results/ik_judged.jsonl"
for r in iiwa14 panda; do
  case "$r" in panda) hjcd=panda_kiln_arm ;; *) hjcd=iiwa14_kiln ;; esac
  shopt -s nullglob
  files=("$DIR"/results/hjcd_q_"$hjcd"*.bin "$DIR"/results/kiln_q_"$r"_*.bin)
  shopt -u nullglob
  [ ${#files[@]} -gt 0 ] || { note "no answers for $r in $DIR/results"; continue; }
  "$BENCH/kiln_bench_ik_peers" judge --plugin "$DIR/kiln/ik_$r.so" --targets "$DIR/data/ik_targets_$r.bin" "${files[@]}" |
    tee -a "$DIR/results/ik_judged.jsonl"
done
