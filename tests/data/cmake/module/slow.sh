#!/bin/sh
# A build step that never finishes (the cancel tests): starts a long-running grandchild, records
# its own pid and the grandchild's in $KILN_TEST_PID_DIR, then waits.
sleep 300 &
echo "$!" > "$KILN_TEST_PID_DIR/grandchild.tmp" && mv "$KILN_TEST_PID_DIR/grandchild.tmp" "$KILN_TEST_PID_DIR/grandchild"
echo "$$" > "$KILN_TEST_PID_DIR/child.tmp" && mv "$KILN_TEST_PID_DIR/child.tmp" "$KILN_TEST_PID_DIR/child"
wait
exit 1
