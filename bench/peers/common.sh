# Shared helpers of bench/peers/*.sh (sourced, not run).

die() { echo "bench/peers: $*" >&2; exit 1; }
note() { echo "bench/peers: $*" >&2; }

# The commit of a checkout: VAR's value when set (for a copy without .git), else git's HEAD.
peer_commit() {  # peer_commit DIR OVERRIDE
  if [ -n "${2:-}" ]; then echo "$2"; return; fi
  git -C "$1" rev-parse HEAD 2>/dev/null || echo unknown
}

# GRiD's URDF parser (URDFParser.parse_links/parse_joints) reads xyz, rpy and axis values with
# str.split(" "): a double space (kiln's iiwa14.urdf has rpy="1.57079632679   0 3.14159265359")
# gives an empty field and float('') fails, and the parse is abandoned ("URDF parsing failed").
# It also indexes origin["rpy"] and origin["xyz"] unconditionally, while the URDF format lets both
# default to "0 0 0" (GATO's own iiwa14.urdf has <origin xyz="..."/> in its inertials).
# normalize_urdf IN OUT: runs of blanks inside xyz/rpy values become one space, leading and
# trailing blanks go, and an <origin> without rpy= or xyz= gets the URDF default written out.
normalize_urdf() {
  sed -E \
    -e ':a' -e 's/((xyz|rpy)="[^"]*)[[:space:]]{2,}/\1 /' -e 'ta' \
    -e 's/((xyz|rpy)=")[[:space:]]+/\1/g' \
    -e 's/((xyz|rpy)="[^"]*[^[:space:]"])[[:space:]]+"/\1"/g' \
    -e '/<origin[^>]*rpy=/! s/<origin([[:space:]/])/<origin rpy="0 0 0"\1/g' \
    -e '/<origin[^>]*xyz=/! s/<origin([[:space:]/])/<origin xyz="0 0 0"\1/g' \
    "$1" > "$2"
}

# GRiD (both the robot-acceleration original and the A2R-Lab fork HJCD-IK uses) supports revolute,
# prismatic and fixed joints, but fails on the Panda's finger joints (a prismatic joint with the
# negative axis "0 -1 0" and a <mimic>). The IK and RNEA comparisons are on the 7-joint arm, so the
# two finger joints become fixed: the arm's kinematics and the link frames up to panda_link8/hand are
# unchanged (the fingers' masses then ride on the hand, which only matters for dynamics of the hand).
panda_arm_only() {
  sed -E 's/(<joint name="panda_finger_joint[12]" type=")prismatic"/\1fixed"/' "$1" > "$2"
}

need_file() { [ -f "$1" ] || die "$2"; }
need_dir() { [ -d "$1" ] || die "$2"; }
need_cmd() { command -v "$1" > /dev/null 2>&1 || die "'$1' not found: $2"; }
