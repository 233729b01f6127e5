#!/usr/bin/env bash
# --expect on a pod checks every chip's output, not chip 0's only: ring_shift
# on 4 chips gives chip c its left neighbour's input (chip c holds c). One
# file for all chips fails on the chips that differ, named (exit 1); files
# per chip ({chip}) pass on all 4, and fail when one chip's file is wrong.
# Usage: run_pod_expect.sh TPUEMU SOURCE_DIR
set -euo pipefail
tpuemu=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir"
/usr/bin/python3 -c "
import numpy as np
for c in range(4):
    np.save(f'x_{c}.npy', np.full((1024,), c, np.float32))
    np.save(f'e_{c}.npy', np.full((1024,), (c + 3) % 4, np.float32))
"
run=(run "$src/programs/ring_shift.llo" --topology 4 --wrap x --in 0=x_{chip}.npy)
expect_code() {  # CODE OUTPUT_FILE ARGS...
  local want=$1 out=$2
  shift 2
  set +e
  "$tpuemu" "${run[@]}" "$@" > "$out" 2>&1
  local code=$?
  set -e
  [[ $code == "$want" ]] || { echo "expected exit $want for $*, got $code"; cat "$out"; exit 1; }
}
# Chip 0 holds chip 3's input, 3: the other three chips differ.
expect_code 1 one.txt --expect 1=x_3.npy
grep -q "check     operand 1 of chip 1 vs x_3.npy: 1024 of 1024 elements differ" one.txt || { cat one.txt; exit 1; }
grep -q "check     operand 1 of chip 3 vs x_3.npy: 1024 of 1024 elements differ" one.txt || { cat one.txt; exit 1; }
if grep -q "of chip 0 " one.txt; then cat one.txt; exit 1; fi
expect_code 0 all.txt --expect 1=e_{chip}.npy
grep -q "check     operand 1 vs e_{chip}.npy: bit-exact on all 4 chips" all.txt || { cat all.txt; exit 1; }
cp x_2.npy e_2.npy
expect_code 1 two.txt --expect 1=e_{chip}.npy
grep -q "check     operand 1 of chip 2 vs e_2.npy: 1024 of 1024 elements differ" two.txt || { cat two.txt; exit 1; }
[[ $(grep -c "^check" two.txt) == 1 ]] || { cat two.txt; exit 1; }
# A missing chip's file is refused before the run.
rm e_3.npy
expect_code 2 missing.txt --expect 1=e_{chip}.npy
grep -q "e_3.npy: cannot open file" missing.txt || { cat missing.txt; exit 1; }
echo "pass"
