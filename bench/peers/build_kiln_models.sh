#!/usr/bin/env bash
# kiln's TrajOpt plugin built from a peer's robot model, so that both solve the same robot: the
# generated chain of URDF (base -> tip) compiled into plugins/trajopt/module for each horizon N.
#   build_kiln_models.sh KILN_BUILD URDF BASE TIP NAME OUT [--knots "32 64 128"] [--arch 90-real]
# Writes OUT/libkiln_trajopt_<NAME>_N<N>.so (plugin id org.kiln.trajopt.<NAME>.n<N>) and
# OUT/gen/<NAME>/ (the generated headers). KILN_BUILD: a configured and built kiln build tree
# (its kiln-urdf-fk). GATO's iiwa14: build_kiln_models.sh build urdf/iiwa14_gato.urdf iiwa_base L7
# iiwa14_gato OUT (GATO's end-effector position is L7's origin: its generated FK adds no offset).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
. "$HERE/common.sh"
[ $# -ge 6 ] || die "usage: build_kiln_models.sh KILN_BUILD URDF BASE TIP NAME OUT [--knots \"32 64 128\"] [--arch 90-real]"
BUILD="$(cd "$1" && pwd)" URDF="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")" BASE="$3" TIP="$4" NAME="$5"
mkdir -p "$6"; OUTDIR="$(cd "$6" && pwd)"; shift 6
KNOTS="32 64 128" ARCH="90-real"
while [ $# -gt 0 ]; do
  case "$1" in
    --knots) KNOTS="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    *) die "build_kiln_models.sh: unknown argument '$1'" ;;
  esac
done
[[ "$NAME" =~ ^[a-z0-9_]+$ ]] || die "NAME '$NAME' must be lower-case letters, digits and _ (it becomes a plugin id)"
GEN="$BUILD/plugins/robotgen/kiln-urdf-fk"
[ -x "$GEN" ] || die "$GEN is missing: build kiln first (cmake --build $BUILD)"
mkdir -p "$OUTDIR/gen/$NAME" "$OUTDIR/cmake"
"$GEN" "$URDF" --base "$BASE" --tip "$TIP" -o "$OUTDIR/gen/$NAME/kiln_fk_chain.cuh" \
  --dynamics "$OUTDIR/gen/$NAME/kiln_rnea_chain.cuh"
for n in $KNOTS; do
  b="$OUTDIR/cmake/${NAME}_N$n"
  cmake -S "$ROOT/plugins/trajopt/module" -B "$b" -DCMAKE_BUILD_TYPE=Release -DKILN_ABI_DIR="$ROOT/abi" \
    -DKILN_GEN_DIR="$OUTDIR/gen/$NAME" -DKILN_TRAJOPT_N="$n" -DKILN_TRAJOPT_PLUGIN_ID="org.kiln.trajopt.$NAME.n$n" \
    -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$b.configure.log" 2>&1 || { cat "$b.configure.log" >&2; die "configuring N=$n failed"; }
  cmake --build "$b" -j "${JOBS:-2}" > "$b.build.log" 2>&1 || { tail -30 "$b.build.log" >&2; die "building N=$n failed"; }
  cp "$b/libkiln_trajopt.so" "$OUTDIR/libkiln_trajopt_${NAME}_N$n.so"
  note "built $OUTDIR/libkiln_trajopt_${NAME}_N$n.so"
done
