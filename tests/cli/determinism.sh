#!/usr/bin/env bash
# Two runs of the same program (a chip and a pod), inputs and preset give bit-identical outputs
# and identical reports (cycles, stalls, utilisation).
# Usage: determinism.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
for run in 1 2; do
  "$tpuemu" demo --single-chip --m 136 --k 384 --n 300 --report "demo$run.json" > "demo$run.txt"
  "$tpuemu" demo --topology 2x2 --b 64 --d 256 --f 384 --report "pod$run.json" > "pod$run.txt"
done
cmp demo1.json demo2.json || { echo "FAIL: demo reports differ"; diff demo1.json demo2.json | head; exit 1; }
cmp pod1.json pod2.json || { echo "FAIL: pod demo reports differ"; diff pod1.json pod2.json | head; exit 1; }
grep -q "check     PASS" demo1.txt || { echo "FAIL: demo result check"; cat demo1.txt; exit 1; }
grep -q "check     PASS" pod1.txt || { echo "FAIL: pod demo result check"; cat pod1.txt; exit 1; }
echo PASS
