#!/bin/sh
# A fast stand-in for nvcc (the reliability suite points KILN_NVCC here). It logs every call as
# tests/data/build/nvcc-wrapper.sh does, "compiles" a unit by copying its source and "links" by
# copying a prebuilt kiln test plugin (KILN_TEST_FAKE_PLUGIN), so a build costs milliseconds and
# thousands of them fit in a test. KILN_TEST_FAKE_DELAY (seconds) slows every compile, to widen
# the window in which concurrent builders race.
echo "$*" >> "${KILN_TEST_NVCC_LOG:-/dev/null}"
if [ "$1" = "--version" ]; then
  echo "nvcc: NVIDIA (R) Cuda compiler driver (kiln reliability suite stand-in)"
  echo "Cuda compilation tools, release 13.0, V13.0.0"
  exit 0
fi
out=
prev=
for arg in "$@"; do
  if [ "$prev" = "-o" ]; then out=$arg; fi
  prev=$arg
done
if [ -z "$out" ]; then echo "fake nvcc: no -o in: $*" >&2; exit 2; fi
case "$1" in
  -c)
    if [ -n "${KILN_TEST_FAKE_DELAY:-}" ]; then sleep "$KILN_TEST_FAKE_DELAY"; fi
    cat "$2" > "$out" ;;
  --shared)
    cp "${KILN_TEST_FAKE_PLUGIN:?set KILN_TEST_FAKE_PLUGIN to a kiln plugin}" "$out" ;;
  *)
    echo "fake nvcc: unexpected call: $*" >&2; exit 2 ;;
esac
