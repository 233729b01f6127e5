#!/usr/bin/env bash
# `tpuemu run` maps big .npy inputs (map_npy) unless the run rewrites the file:
#  1. mapped --in and --expect files give the bit-exact check;
#  2. --expect naming the --out file compares with the file as it was before
#     the run (read, not mapped: a mapping would see the rewrite), so an
#     output that differs from it is reported (exit 1);
#  3. --in naming the --out file (the input rewritten in place) still reads
#     the input as it was.
# The operands are 512x512 f32, 1 MiB: the size from which map_npy maps.
# Usage: run_mapped_inputs.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" gen matmul --m 512 --k 512 --n 512 --inputs mm -o mm.llo > /dev/null
run() { "$tpuemu" run mm.llo --chip v5e "$@"; }

run --in 0=mm.a.npy --in 1=mm.b.npy --out 2=out.npy --expect 2=mm.expected.npy > 1.txt ||
  fail "mapped inputs: $(cat 1.txt)"
grep -q "bit-exact" 1.txt || fail "mapped inputs: no bit-exact check: $(cat 1.txt)"
cmp -s out.npy mm.expected.npy || fail "mapped inputs: out.npy differs from mm.expected.npy"

cp mm.a.npy same.npy
set +e
run --in 0=mm.a.npy --in 1=mm.b.npy --out 2=same.npy --expect 2=same.npy > 2.txt
code=$?
set -e
[ "$code" -eq 1 ] || fail "--expect = --out: exit $code, expected 1: $(cat 2.txt)"
grep -q "elements differ" 2.txt || fail "--expect = --out: the mismatch is not reported: $(cat 2.txt)"
cmp -s same.npy mm.expected.npy || fail "--expect = --out: the output was not written"

cp mm.a.npy in_place.npy
ln -f in_place.npy in_place_link.npy  # another name of the same file
run --in 0=in_place_link.npy --in 1=mm.b.npy --out 2=in_place.npy --expect 2=mm.expected.npy > 3.txt ||
  fail "--in = --out: $(cat 3.txt)"
grep -q "bit-exact" 3.txt || fail "--in = --out: $(cat 3.txt)"
echo "mapped inputs: bit-exact; --expect and --in naming the --out file read as they were"
