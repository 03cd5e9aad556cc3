#!/usr/bin/env bash
# Prepares GATO, HJCD-IK and GRiD beside kiln: copies the user's checkouts into OUT (the checkouts
# are never modified), applies the fixes CUDA 13 and kiln's URDFs need, generates GRiD's headers
# (Python + numpy, sympy, beautifulsoup4, lxml) or takes pre-generated ones, and compiles the three
# harnesses of bench/peers/ (nvcc; no CMake, no Python bindings, no yaml-cpp, no pybind11).
#
#   bench/peers/build_all.sh --gato PATH --grid PATH --hjcd PATH --out DIR
#        [--only gato|grid|hjcd] [--headers DIR] [--no-compile] [--arch sm_90]
#        [--hjcd-codegen PATH]   (an A2R-Lab GRiD checkout whose GRiDCodeGenerator has X_warp)
#        [--kiln-build DIR]      (a built kiln tree: kiln's side of the equal-work rows, below)
#
# Then bench/peers/run_all.sh DIR (or run_grid.sh / run_gato.sh / run_hjcd.sh DIR).
# With --kiln-build, OUT/kiln/ also gets kiln's plugins for the same problems (TrajOpt built from
# GATO's URDF for N = 32, 64, 128; IK plugins whose tip is HJCD-IK's end effector) and OUT/data/
# the IK targets both solve: run_kiln.sh OUT KILN_BUILD/bench runs them, judge_ik.sh judges the IK.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
KILN="$(cd "$HERE/../.." && pwd)"
. "$HERE/common.sh"

GATO="" GRID="" HJCD="" OUT="" ONLY="" HEADERS="" COMPILE=1 ARCH="${ARCH:-sm_90}" HJCD_CODEGEN="" KILN_BUILD=""
while [ $# -gt 0 ]; do
  case "$1" in
    --gato) GATO="$2"; shift 2 ;;
    --grid) GRID="$2"; shift 2 ;;
    --hjcd) HJCD="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --headers) HEADERS="$2"; shift 2 ;;
    --no-compile) COMPILE=0; shift ;;
    --arch) ARCH="$2"; shift 2 ;;
    --hjcd-codegen) HJCD_CODEGEN="$2"; shift 2 ;;
    --kiln-build) KILN_BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$OUT" ] || die "--out DIR is missing: the folder that receives the fixed copies, headers and binaries"
want() { [ -z "$ONLY" ] || [ "$ONLY" = "$1" ]; }
mkdir -p "$OUT/src" "$OUT/urdf" "$OUT/headers" "$OUT/harness"
OUT="$(cd "$OUT" && pwd)"
touch "$OUT/COMMITS"

# kiln's robots, normalised for GRiD (see common.sh); the Panda without its finger joints.
normalize_urdf "$KILN/plugins/ik/robots/iiwa14.urdf" "$OUT/urdf/iiwa14_kiln.urdf"
normalize_urdf "$KILN/plugins/ik/robots/panda.urdf" "$OUT/urdf/panda_kiln.urdf.tmp"
panda_arm_only "$OUT/urdf/panda_kiln.urdf.tmp" "$OUT/urdf/panda_kiln_arm.urdf"
rm -f "$OUT/urdf/panda_kiln.urdf.tmp"

# The harnesses and kiln's states-file reader travel with OUT (the GPU machine needs only OUT).
cp "$HERE"/grid_rnea_harness.cu "$HERE"/gato_mpc_harness.cu "$HERE"/hjcd_ik_harness.cu "$OUT/harness/"
cp "$KILN/bench/rnea_kdl_file.hpp" "$KILN/bench/gpu_queued_timer.cuh" "$OUT/harness/"
cp "$HERE"/common.sh "$HERE"/compile_peers.sh "$HERE"/run_all.sh "$HERE"/run_grid.sh "$HERE"/run_gato.sh \
   "$HERE"/run_hjcd.sh "$HERE"/run_on_gpu.sh "$HERE"/run_kiln.sh "$HERE"/judge_ik.sh "$OUT/"

set_commit() {  # set_commit NAME VALUE: one "NAME VALUE" line in OUT/COMMITS
  grep -v "^$1 " "$OUT/COMMITS" > "$OUT/COMMITS.tmp" || true
  echo "$1 $2" >> "$OUT/COMMITS.tmp"
  mv "$OUT/COMMITS.tmp" "$OUT/COMMITS"
}

python_for_grid() {  # a Python with numpy, sympy, bs4 and lxml (GRiD's requirements.txt)
  for py in "${PYTHON:-}" python3 /usr/bin/python3; do
    [ -n "$py" ] || continue
    if "$py" -c 'import numpy, sympy, bs4, lxml' 2> /dev/null; then echo "$py"; return; fi
  done
  die "GRiD's code generator needs Python 3 with numpy, sympy, beautifulsoup4 and lxml (pip install numpy sympy beautifulsoup4 lxml, or apt-get install python3-numpy python3-sympy python3-bs4 python3-lxml); or pass --headers DIR with headers generated elsewhere"
}

# ---- GRiD (robot-acceleration/GRiD): RNEA headers for kiln's iiwa14, GATO's iiwa14 and the Panda arm
if want grid; then
  [ -n "$GRID" ] || die "--grid PATH is missing: a checkout of robot-acceleration/GRiD with its submodules"
  mkdir -p "$OUT/headers/grid_rnea"
  if [ -n "$HEADERS" ]; then
    need_dir "$HEADERS/grid_rnea" "--headers $HEADERS has no grid_rnea/ folder (pre-generated headers, as build_all.sh writes them)"
    cp -r "$HEADERS/grid_rnea/." "$OUT/headers/grid_rnea/"
  else
    need_file "$GRID/generateGRiD.py" "$GRID is not a GRiD checkout (no generateGRiD.py)"
    for sub in URDFParser GRiDCodeGenerator RBDReference; do
      need_file "$GRID/$sub/__init__.py" "$GRID/$sub is empty: run 'git submodule update --init --recursive' in $GRID"
    done
    PY="$(python_for_grid)"
    rm -rf "$OUT/src/grid" && mkdir -p "$OUT/src/grid" && cp -r "$GRID/." "$OUT/src/grid/" && rm -rf "$OUT/src/grid/.git"
    gen_grid() {  # gen_grid NAME URDF
      mkdir -p "$OUT/headers/grid_rnea/$1"
      (cd "$OUT/headers/grid_rnea/$1" && "$PY" "$OUT/src/grid/generateGRiD.py" "$2" grid > gen.log 2>&1) || true
      [ -s "$OUT/headers/grid_rnea/$1/grid.cuh" ] || die "GRiD did not generate a header for $2 (log: $OUT/headers/grid_rnea/$1/gen.log)"
      note "GRiD header for $1: $OUT/headers/grid_rnea/$1/grid.cuh"
    }
    gen_grid iiwa14_kiln "$OUT/urdf/iiwa14_kiln.urdf"
    gen_grid panda_kiln_arm "$OUT/urdf/panda_kiln_arm.urdf"
    if [ -n "$GATO" ] && [ -f "$GATO/examples/iiwa_description/iiwa14.urdf" ]; then
      normalize_urdf "$GATO/examples/iiwa_description/iiwa14.urdf" "$OUT/urdf/iiwa14_gato.urdf"
      gen_grid iiwa14_gato "$OUT/urdf/iiwa14_gato.urdf"
    fi
  fi
  set_commit grid "$(peer_commit "$GRID" "${GRID_COMMIT:-}")"
fi

# ---- GATO (A2R-Lab/GATO): the solver is header-only CUDA (gato/); its iiwa14 model is the
# grid.cuh it ships (gato/dynamics/iiwa14/iiwa14_grid.cuh, from examples/iiwa_description/iiwa14.urdf).
if want gato; then
  [ -n "$GATO" ] || die "--gato PATH is missing: a checkout of A2R-Lab/GATO"
  need_file "$GATO/gato/bsqp/bsqp.cuh" "$GATO is not a GATO checkout (no gato/bsqp/bsqp.cuh)"
  rm -rf "$OUT/src/gato" && mkdir -p "$OUT/src/gato"
  cp -r "$GATO/gato" "$OUT/src/gato/"
  mkdir -p "$OUT/src/gato/examples/iiwa_description"
  cp "$GATO/examples/iiwa_description/iiwa14.urdf" "$OUT/src/gato/examples/iiwa_description/" 2> /dev/null || true
  # CUDA 13 removed cudaDeviceProp::memoryClockRate; gato/utils/cuda.cuh's printDeviceInfo() prints
  # it (and a bandwidth derived from it). Read it with cudaDeviceGetAttribute instead.
  sed -i -E \
    -e 's/^([[:space:]]*)std::cout << "Memory clock rate: " << prop\.memoryClockRate/\1int memoryClockRate = 0; cudaDeviceGetAttribute(\&memoryClockRate, cudaDevAttrMemoryClockRate, 0);\n\1std::cout << "Memory clock rate: " << memoryClockRate/' \
    -e 's/2\.0 \* prop\.memoryClockRate/2.0 * memoryClockRate/' \
    "$OUT/src/gato/gato/utils/cuda.cuh"
  if grep -q 'prop\.memoryClockRate' "$OUT/src/gato/gato/utils/cuda.cuh"; then
    die "the memoryClockRate fix did not apply to gato/utils/cuda.cuh (GATO changed?): replace prop.memoryClockRate by cudaDeviceGetAttribute(..., cudaDevAttrMemoryClockRate, 0) there"
  fi
  set_commit gato "$(peer_commit "$GATO" "${GATO_COMMIT:-}")"
fi

# ---- HJCD-IK (A2R-Lab/HJCD-IK): src/hjcd_kernel.cu compiled into hjcd_ik_harness.cu, against a
# grid.cuh from the A2R-Lab fork of GRiD (it needs grid::X_warp / X_single_thread / init_joint_limits).
if want hjcd; then
  [ -n "$HJCD" ] || die "--hjcd PATH is missing: a checkout of A2R-Lab/HJCD-IK"
  need_file "$HJCD/src/hjcd_kernel.cu" "$HJCD is not an HJCD-IK checkout (no src/hjcd_kernel.cu)"
  rm -rf "$OUT/src/hjcd" && mkdir -p "$OUT/src/hjcd"
  cp -r "$HJCD/src" "$HJCD/include" "$OUT/src/hjcd/"
  rm -rf "$OUT/src/hjcd/include/test_cuh"   # HJCD-IK's shipped headers (Panda, Fetch): not used here
  # nvcc 13 (two-phase name lookup in templates) rejects include/device_utils.cuh, whose templates
  # use N before src/hjcd_kernel.cu declares it (enum : int { N = grid::NUM_JOINTS } comes after the
  # #include). Declare N right before device_utils.cuh is included.
  sed -i \
    -e '/^enum : int { N = grid::NUM_JOINTS };$/d' \
    -e 's|^#include "include/util.h"$|#include "include/util.h"\nenum : int { N = grid::NUM_JOINTS };  // before device_utils.cuh, which uses N|' \
    "$OUT/src/hjcd/src/hjcd_kernel.cu"
  grep -q '^enum : int { N = grid::NUM_JOINTS };  // before' "$OUT/src/hjcd/src/hjcd_kernel.cu" \
    || die "the N-declaration fix did not apply to src/hjcd_kernel.cu (HJCD-IK changed?)"
  # The refinement's stopping tolerances (1e-8 m, 1e-8 rad) as macros with those defaults, so that
  # compile_peers.sh can also build it stopping at kiln's (1 mm, 0.01 rad): equal accuracy.
  sed -i -E 's|^( *)1e-8, 1e-8, 5e-3, max_iters, stop_on_first$|\1HJCD_LM_POSITION_TOLERANCE, HJCD_LM_ORIENTATION_TOLERANCE, 5e-3, max_iters, stop_on_first|' \
    "$OUT/src/hjcd/src/hjcd_kernel.cu"
  grep -q 'HJCD_LM_POSITION_TOLERANCE, HJCD_LM_ORIENTATION_TOLERANCE' "$OUT/src/hjcd/src/hjcd_kernel.cu" \
    || die "the tolerance macros did not apply to src/hjcd_kernel.cu (HJCD-IK changed?)"
  sed -i '1i #ifndef HJCD_LM_POSITION_TOLERANCE\n#define HJCD_LM_POSITION_TOLERANCE 1e-8\n#endif\n#ifndef HJCD_LM_ORIENTATION_TOLERANCE\n#define HJCD_LM_ORIENTATION_TOLERANCE 1e-8\n#endif' \
    "$OUT/src/hjcd/src/hjcd_kernel.cu"
  mkdir -p "$OUT/headers/hjcd"
  if [ -n "$HEADERS" ]; then
    need_dir "$HEADERS/hjcd" "--headers $HEADERS has no hjcd/ folder"
    cp -r "$HEADERS/hjcd/." "$OUT/headers/hjcd/"
  else
    # HJCD-IK's external/GRiD submodule pins a GRiDCodeGenerator (a47cbdc) older than the X_warp
    # functions its kernel calls (added in A2R-Lab/GRiDCodeGenerator 297ea4c, Dec 2025): use a GRiD
    # whose generator has them (--hjcd-codegen PATH, else HJCD-IK's own external/GRiD if it has them).
    CG="${HJCD_CODEGEN:-$HJCD/external/GRiD}"
    need_file "$CG/GRiDCodeGenerator/GRiDCodeGenerator.py" "$CG/GRiDCodeGenerator is missing: run 'git submodule update --init --recursive' in $HJCD, or pass --hjcd-codegen PATH (an A2R-Lab/GRiD checkout)"
    grep -q X_warp "$CG/GRiDCodeGenerator/GRiDCodeGenerator.py" || die "$CG/GRiDCodeGenerator does not generate X_warp, which HJCD-IK's kernel calls: check out A2R-Lab/GRiDCodeGenerator 19e444c or later there (git -C $CG/GRiDCodeGenerator checkout 19e444c8d3f2500fec8b94987cfb876ab565f526), or pass --hjcd-codegen PATH"
    PY="$(python_for_grid)"
    rm -rf "$OUT/src/hjcd_codegen" && mkdir -p "$OUT/src/hjcd_codegen/GRiD"
    cp -r "$CG/." "$OUT/src/hjcd_codegen/GRiD/" && rm -rf "$OUT/src/hjcd_codegen/GRiD/.git"
    for r in panda_kiln_arm iiwa14_kiln; do
      mkdir -p "$OUT/headers/hjcd/$r"
      (cd "$OUT/headers/hjcd/$r" && "$PY" - "$OUT/src/hjcd_codegen" "$OUT/urdf/$r.urdf" > gen.log 2>&1 <<'PYEOF'
import sys
sys.path.insert(0, sys.argv[1])
from GRiD.URDFParser import URDFParser
from GRiD.GRiDCodeGenerator import GRiDCodeGenerator
robot = URDFParser().parse(sys.argv[2])
if robot is None: sys.exit("URDF parsing failed: " + sys.argv[2])
# as HJCD-IK's benchmarks/ik_benchmark.py: GRiDCodeGenerator(robot, False, True), homogeneous transforms on
GRiDCodeGenerator(robot, False, True).gen_all_code(include_homogenous_transforms=True)
PYEOF
      ) || true
      [ -s "$OUT/headers/hjcd/$r/grid.cuh" ] || die "no HJCD-IK header for $r (log: $OUT/headers/hjcd/$r/gen.log)"
      note "HJCD-IK header for $r: $OUT/headers/hjcd/$r/grid.cuh"
    done
  fi
  set_commit hjcd "$(peer_commit "$HJCD" "${HJCD_COMMIT:-}")"
fi

# ---- kiln's side of the equal-work rows (--kiln-build): the same robot models and targets.
if [ -n "$KILN_BUILD" ]; then
  CLI="$KILN_BUILD/src/kiln"
  need_file "$CLI" "$KILN_BUILD is not a built kiln tree (no src/kiln)"
  mkdir -p "$OUT/kiln" "$OUT/data"
  if want gato && [ -n "$GATO" ]; then
    # GATO's iiwa14 (its end effector is L7's origin: its generated FK adds no offset).
    cp "$GATO/examples/iiwa_description/iiwa14.urdf" "$OUT/urdf/iiwa14_gato_kiln.urdf"
    bash "$HERE/build_kiln_models.sh" "$KILN_BUILD" "$OUT/urdf/iiwa14_gato_kiln.urdf" iiwa_base L7 iiwa14_gato \
      "$OUT/kiln" --arch "${ARCH#sm_}-real"
  fi
  if want hjcd; then
    # HJCD-IK places the frame of the chain's last movable joint: lbr_iiwa_link_7, panda_link7.
    for spec in "iiwa14 iiwa14.urdf lbr_iiwa_link_0 lbr_iiwa_link_7" "panda panda.urdf panda_link0 panda_link7"; do
      set -- $spec
      "$CLI" robot init "$KILN/plugins/ik/robots/$2" --base "$3" --tip "$4" --name "peers_$1" --ik -o "$OUT/kiln" --force > /dev/null
      KILN_DEVICE="sm_${ARCH#sm_}" KILN_CACHE_DIR="$OUT/kiln/store" "$CLI" build "$OUT/kiln/ik-peers_$1.json" > "$OUT/kiln/ik-$1.build.log" 2>&1 ||
        { tail -20 "$OUT/kiln/ik-$1.build.log" >&2; die "building kiln's IK plugin for $1 failed"; }
      cp "$(find "$OUT/kiln/store" -name "libkiln_ik_peers_$1.so" | head -1)" "$OUT/kiln/ik_$1.so"
      "$KILN_BUILD/bench/kiln_bench_ik_peers" targets --plugin "$OUT/kiln/ik_$1.so" --count 1000 --seed 20261206 \
        --out "$OUT/data/ik_targets_$1.bin" > /dev/null 2>> "$OUT/kiln/targets.log"
    done
  fi
  note "kiln's side in $OUT/kiln (run: bash $OUT/run_kiln.sh $OUT $KILN_BUILD/bench)"
fi

if [ "$COMPILE" = 1 ]; then
  ARCH="$ARCH" bash "$OUT/compile_peers.sh" "$OUT" ${ONLY:+--only "$ONLY"}
else
  note "prepared $OUT (not compiled: run bash $OUT/compile_peers.sh $OUT on the GPU machine)"
fi
