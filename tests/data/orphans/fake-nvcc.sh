#!/bin/sh
# A compiler that never finishes, for the orphan tests (KILN_NVCC points here): each compile
# starts a long-running grandchild (as nvcc starts cicc, ptxas, gcc), records its own pid and
# the grandchild's in $KILN_TEST_PID_DIR, then waits for it.
if [ "$1" = "--version" ]; then
  echo "nvcc: kiln orphan-test fake"
  echo "Cuda compilation tools, release 13.0, V13.0.0"
  exit 0
fi
[ "$1" = "--list-gpu-code" ] && exit 1  # a probe, not a compile: no list (kiln then checks no arch)
sleep 300 &
echo "$!" > "$KILN_TEST_PID_DIR/grandchild.tmp" && mv "$KILN_TEST_PID_DIR/grandchild.tmp" "$KILN_TEST_PID_DIR/grandchild"
echo "$$" > "$KILN_TEST_PID_DIR/child.tmp" && mv "$KILN_TEST_PID_DIR/child.tmp" "$KILN_TEST_PID_DIR/child"
wait
exit 1
