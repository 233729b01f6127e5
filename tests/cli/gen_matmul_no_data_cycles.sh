#!/usr/bin/env bash
# A timing-only run (--no-data) of a generated matmul takes the cycles of the
# run with data, also where K is no multiple of 128 (the last k-block's
# multiplies are masked by a mask the vector unit computes: timing-only runs
# compute no vector data, and the MXU's check of the mask against the
# latched weights faulted there before 2026-12-06), on v5e and on v5p split
# over both cores, with split and unsplit column blocks.
# Usage: gen_matmul_no_data_cycles.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
cycles() { sed -n 's/^cycles *\([0-9]*\) .*/\1/p'; }
for shape in "v5e 256 200 512 -" "v5e 272 200 128 -" "v5e 256 384 256 -" "v5p 512 300 768 --split-cores"; do
  read -r chip m k n split <<< "$shape"
  [ "$split" = - ] && split=""
  topo=()
  [ -n "$split" ] && topo=(--topology 1)
  "$tpuemu" gen matmul --chip "$chip" --m "$m" --k "$k" --n "$n" --inputs in $split -o p.llo
  timing=$("$tpuemu" run p.llo --chip "$chip" "${topo[@]}" --no-data | cycles) || fail "$shape: --no-data run failed"
  out=$("$tpuemu" run p.llo --chip "$chip" "${topo[@]}" --in 0=in.a.npy --in 1=in.b.npy --expect 2=in.expected.npy)
  grep -q "bit-exact" <<< "$out" || fail "$shape: not bit-exact"
  data=$(cycles <<< "$out")
  echo "$shape: $timing cycles timing-only, $data with data"
  [ -n "$timing" ] && [ "$timing" = "$data" ] || fail "$shape: $timing cycles timing-only, $data with data"
done
echo PASS
