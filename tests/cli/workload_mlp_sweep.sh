#!/usr/bin/env bash
# tpuemu workload mlp --sweep: one CSV row per (strategy, batch) in order, the
# columns the docs list, and an SVG with a line per strategy and the book's
# threshold marked.
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
rm -f sweep.csv sweep.svg
"$tpuemu" workload mlp --chip v5e --topology 2x2 --strategy dp,fsdp --sweep batch=512:2048 --no-data \
  --csv sweep.csv --plot sweep.svg > out.txt || fail "exit code $?"
cat out.txt
head -1 sweep.csv | grep -q '^strategy,batch,step_seconds,compute_seconds,communication_seconds,exposed_communication_seconds,mfu,predicted_seconds,book_t_math_seconds,book_t_comms_seconds,book_seconds,check$' ||
  fail "header: $(head -1 sweep.csv)"
got=$(tail -n +2 sweep.csv | cut -d, -f1,2 | tr '\n' ' ')
[ "$got" = "dp,512 dp,1024 dp,2048 fsdp,512 fsdp,1024 fsdp,2048 " ] || fail "rows: $got"
# Every row measured: step time = compute + exposed communication > 0, MFU in (0, 1), check skipped.
awk -F, 'NR > 1 { if (!($3 > 0 && $4 > 0 && $7 > 0 && $7 < 1 && $12 == "skipped")) bad = 1;
                  d = $3 - $4 - $6; if (d > 1e-12 || d < -1e-12) bad = 1 } END { exit bad }' sweep.csv ||
  fail "a row is not measured: $(cat sweep.csv)"
# A larger batch takes longer, per strategy.
awk -F, 'NR > 1 { if ($1 == s && $3 <= t) bad = 1; s = $1; t = $3 } END { exit bad }' sweep.csv || fail "step time not growing"
grep -q '<svg' sweep.svg || fail "no SVG"
[ "$(grep -c 'MFU vs batch' sweep.svg)" = 1 ] || fail "no MFU chart"
grep -q "dp: the book&apos;s threshold\|dp: the book's threshold" sweep.svg || fail "no threshold marker"
grep -q '>fsdp<' sweep.svg || fail "no fsdp line in the legend"
echo PASS
