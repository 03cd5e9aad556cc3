#!/usr/bin/env bash
# kiln_bench_ik_peers (bench/peers' IK judge) on the host path: targets drawn from the plugin's
# model, kiln's answers at batch 1 and at one batch of all, judged by the model's double FK; and
# the judge telling a wrong answer (every joint at 0) and a truncated file apart.
#   ik_peers_judge.sh KILN_BENCH_IK_PEERS IK_PLUGIN
set -euo pipefail
BENCH="$1" PLUGIN="$2"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
value() { grep -o "\"$2\":[0-9.e-]*" <<< "$1" | head -1 | cut -d: -f2; }
"$BENCH" targets --plugin "$PLUGIN" --count 20 --seed 7 --out "$TMP/t.bin" > /dev/null 2> "$TMP/err"
[ "$(stat -c %s "$TMP/t.bin")" = 560 ] || fail "20 targets are 560 bytes, got $(stat -c %s "$TMP/t.bin")"
for b in 1 20; do
  "$BENCH" solve --plugin "$PLUGIN" --targets "$TMP/t.bin" --batch $b --out "$TMP/a$b.bin" > /dev/null 2>> "$TMP/err"
  row="$("$BENCH" judge --plugin "$PLUGIN" --targets "$TMP/t.bin" "$TMP/a$b.bin" 2>> "$TMP/err")"
  [ "$(value "$row" success_1mm_1e-2rad)" = 1.0000 ] || fail "batch $b: kiln's answers not all within 1 mm / 0.01 rad: $row"
  [ "$(value "$row" within_limits)" = 1.0000 ] || fail "batch $b: an answer outside the limits: $row"
done
# A forged answers file: the same header, every joint 0: the judge recomputes the errors itself.
head -1 "$TMP/a1.bin" > "$TMP/zero.bin"
head -c $((8 * 17 * 20)) /dev/zero >> "$TMP/zero.bin"
row="$("$BENCH" judge --plugin "$PLUGIN" --targets "$TMP/t.bin" "$TMP/zero.bin" 2>> "$TMP/err")"
[ "$(value "$row" success_1mm_1e-2rad)" = 0.0000 ] || fail "answers of q = 0 judged a success: $row"
head -c 1000 "$TMP/a1.bin" > "$TMP/short.bin"
if "$BENCH" judge --plugin "$PLUGIN" --targets "$TMP/t.bin" "$TMP/short.bin" > /dev/null 2> "$TMP/short.err"; then
  fail "a truncated answers file was judged"
fi
grep -q "ends after" "$TMP/short.err" || fail "the truncated file's refusal does not say where it ends: $(cat "$TMP/short.err")"
echo "ok: 20 targets, batches 1 and 20 judged within 1 mm / 0.01 rad; forged and truncated answers refused"
