#!/usr/bin/env bash
# gen matmul --split-cores (programs/generators.hpp, "Core split"): on a v5p
# (2 TensorCores) the split program is bit-exact with the unsplit one's
# reference, both cores move the same DMA bytes, and it takes fewer cycles;
# one split by columns, one by rows (the header says which). On a one-core
# chip (v5e) the option changes nothing. A shape that does not split exits 2.
# Usage: gen_matmul_split_cores.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
cycles() { jq -r .cycles "$1"; }
for shape in "256 512 1024 columns" "512 256 384 rows"; do
  read -r m k n how <<< "$shape"
  "$tpuemu" gen matmul --chip v5p --m "$m" --k "$k" --n "$n" --inputs t -o t.llo
  "$tpuemu" gen matmul --chip v5p --m "$m" --k "$k" --n "$n" --split-cores -o t--split-cores.llo
  for split in "" --split-cores; do
    "$tpuemu" run "t$split.llo" --chip v5p --topology 1 --in 0=t.a.npy --in 1=t.b.npy --expect 2=t.expected.npy \
      --report "r$split.json" | grep -q "bit-exact" || fail "$m x $k x $n $split: not bit-exact"
  done
  grep -q "core c computes $how" t--split-cores.llo || fail "$m x $k x $n: not split by $how"
  whole=$(cycles r.json) halves=$(cycles r--split-cores.json)
  echo "$m x $k x $n: one program on both cores $whole cycles, split by $how $halves cycles"
  [ "$halves" -lt $((whole * 9 / 10)) ] || fail "the split is not faster"
  jq -e '[.per_chip[0].cores[].dma_bytes] | length == 2 and .[0] == .[1] and .[0] > 0' r--split-cores.json > /dev/null ||
    fail "the cores do not share the work evenly"
done
"$tpuemu" gen matmul --chip v5e --m 256 --k 512 --n 1024 -o one.llo
"$tpuemu" gen matmul --chip v5e --m 256 --k 512 --n 1024 --split-cores -o split.llo
cmp -s one.llo split.llo || fail "--split-cores changed a one-core chip's program"
set +e
out=$("$tpuemu" gen matmul --chip v5p --m 8 --k 128 --n 128 --split-cores 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "does not split over 2 cores" <<< "$out" || fail "an unsplittable shape: exit $rc: $out"
echo PASS
