#!/usr/bin/env bash
# Two runs of the same program, inputs and preset give bit-identical outputs
# and identical reports (cycles, stalls, utilisation).
# Usage: determinism.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
for run in 1 2; do
  "$tpuemu" demo --m 136 --k 384 --n 300 --report "demo$run.json" > "demo$run.txt"
done
cmp demo1.json demo2.json || { echo "FAIL: demo reports differ"; diff demo1.json demo2.json | head; exit 1; }
grep -q "check     PASS" demo1.txt || { echo "FAIL: demo result check"; cat demo1.txt; exit 1; }
echo PASS
