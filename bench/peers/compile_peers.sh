#!/usr/bin/env bash
# Compiles the harnesses in DIR (as build_all.sh prepared it) with nvcc, in parallel:
#   DIR/bin/grid_rnea_<robot>_<fp32|fp64>   one per header in DIR/headers/grid_rnea/
#   DIR/bin/gato_mpc_N<N>_B<B>              N in $GATO_KNOTS (32 64 128), B in $GATO_BATCHES (1 16 64 256 1024)
#   DIR/bin/hjcd_ik_<robot>[_kiln_tolerances]  one per header in DIR/headers/hjcd/ (and one whose
#                                           refinement stops at kiln's 1 mm / 0.01 rad)
# Usage: compile_peers.sh DIR [--only grid|gato|hjcd]   (env: ARCH=sm_90, JOBS=nproc, NVCC=nvcc)
set -euo pipefail
DIR="$(cd "${1:?usage: compile_peers.sh DIR [--only grid|gato|hjcd]}" && pwd)"; shift
ONLY=""
[ "${1:-}" = "--only" ] && ONLY="${2:-}"
. "$DIR/common.sh"
NVCC="${NVCC:-nvcc}"
command -v "$NVCC" > /dev/null 2>&1 || NVCC=/usr/local/cuda/bin/nvcc
need_cmd "$NVCC" "install the CUDA toolkit (nvcc 12.x or 13.x) or set NVCC=/path/to/nvcc"
ARCH="${ARCH:-sm_90}"
JOBS="${JOBS:-$(nproc)}"
GATO_KNOTS="${GATO_KNOTS:-32 64 128}"
GATO_BATCHES="${GATO_BATCHES:-1 16 64 256 1024}"
mkdir -p "$DIR/bin" "$DIR/logs"
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }

# One line per binary: NAME<TAB>nvcc arguments (run through bash -c by the workers below).
JOBLIST="$DIR/logs/compile_jobs.txt"
: > "$JOBLIST"
H="$DIR/harness"
if want grid; then
  for hdr in "$DIR"/headers/grid_rnea/*/grid.cuh; do
    [ -f "$hdr" ] || continue
    r="$(basename "$(dirname "$hdr")")"
    for p in fp32:float fp64:double; do
      printf '%s\t%s\n' "grid_rnea_${r}_${p%%:*}" "-std=c++17 -O3 -arch=$ARCH -DREAL=${p#*:} -I $(dirname "$hdr") -I $H $H/grid_rnea_harness.cu" >> "$JOBLIST"
    done
  done
fi
if want gato && [ -d "$DIR/src/gato/gato" ]; then
  for n in $GATO_KNOTS; do
    for b in $GATO_BATCHES; do
      printf '%s\t%s\n' "gato_mpc_N${n}_B${b}" "-std=c++17 -O3 -use_fast_math -arch=$ARCH -I $DIR/src/gato/gato -DPLANT_IIWA14=1 -DKNOT_POINTS=$n -DBATCH=$b $H/gato_mpc_harness.cu" >> "$JOBLIST"
    done
  done
fi
if want hjcd && [ -d "$DIR/src/hjcd/src" ]; then
  for hdr in "$DIR"/headers/hjcd/*/grid.cuh; do
    [ -f "$hdr" ] || continue
    r="$(basename "$(dirname "$hdr")")"
    printf '%s\t%s\n' "hjcd_ik_${r}" "-std=c++17 -O3 -use_fast_math -Xptxas=-O3 -arch=$ARCH -I $(dirname "$hdr") -I $DIR/src/hjcd -I $DIR/src/hjcd/include $H/hjcd_ik_harness.cu" >> "$JOBLIST"
    # The same, its refinement stopping at kiln's IK tolerances (1 mm, 0.01 rad): equal accuracy.
    printf '%s\t%s\n' "hjcd_ik_${r}_kiln_tolerances" "-std=c++17 -O3 -use_fast_math -Xptxas=-O3 -arch=$ARCH -DHJCD_LM_POSITION_TOLERANCE=1e-3 -DHJCD_LM_ORIENTATION_TOLERANCE=1e-2 -I $(dirname "$hdr") -I $DIR/src/hjcd -I $DIR/src/hjcd/include $H/hjcd_ik_harness.cu" >> "$JOBLIST"
  done
fi
[ -s "$JOBLIST" ] || die "nothing to compile in $DIR (run build_all.sh first)"

compile_one() {  # compile_one NAME ARGS: DIR/bin/NAME, log in DIR/logs/NAME.compile.log, seconds in compile_times.txt
  local name="$1" args="$2" t0 t1
  t0=$(date +%s.%N)
  if "$NVCC" $args -o "$DIR/bin/$name" > "$DIR/logs/$name.compile.log" 2>&1; then
    t1=$(date +%s.%N)
    awk -v n="$name" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.1f\n", n, b - a }' >> "$DIR/logs/compile_times.txt"
  else
    echo "bench/peers: compiling $name failed (log: $DIR/logs/$name.compile.log):" >&2
    tail -5 "$DIR/logs/$name.compile.log" >&2
    return 1
  fi
}
export -f compile_one
export DIR NVCC
: > "$DIR/logs/compile_times.txt"
t0=$(date +%s)
tr '\t' '\n' < "$JOBLIST" | xargs -d '\n' -n 2 -P "$JOBS" bash -c 'compile_one "$0" "$1"'
note "compiled $(wc -l < "$JOBLIST") binaries in $(( $(date +%s) - t0 )) s ($JOBS jobs; per binary: $DIR/logs/compile_times.txt)"
