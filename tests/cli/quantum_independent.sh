#!/usr/bin/env bash
# Cycles do not depend on --quantum. Generated collectives whose cores wait
# for a local DMA while a remote DMA leaving or a remote credit could come
# first, and matmuls on v5p's two TensorCores sharing the HBM port (alone and
# split over the cores on a pod), once differed by up to 20 % (collectives)
# and 73 % (a matmul at quantum 100000); each reports the same cycles with a
# quantum of 1, 64, the default and 100000 cycles (with an in-network
# all-reduce on an NVSwitch node for the switched fabrics).
# Usage: quantum_independent.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
# what; the command that writes program.llo; the run options
cases=(
  "reduce-scatter v5p 4x4x4 64K|collective --op reduce-scatter --chip v5p --topology 4x4x4 --sizes 64K --algo multi-axis|--chip v5p --topology 4x4x4"
  "all-reduce v5e 8x16 64K|collective --op all-reduce --chip v5e --topology 8x16 --sizes 64K --algo multi-axis|--chip v5e --topology 8x16"
  "all-gather v5p 2x2x2 1M|collective --op all-gather --chip v5p --topology 2x2x2 --sizes 1M --algo multi-axis|--chip v5p --topology 2x2x2"
  "reduce-scatter v5p 4x4x4 1M|collective --op reduce-scatter --chip v5p --topology 4x4x4 --sizes 1M --algo multi-axis|--chip v5p --topology 4x4x4"
  "all-reduce h100 node:8 in-network 1M|collective --op all-reduce --chip h100 --topology node:8 --sizes 1M --algo in-network|--chip h100 --topology node:8"
  "matmul 256x1024x896 on both cores of one v5p|gen matmul --chip v5p --m 256 --k 1024 --n 896|--chip v5p"
  "matmul 256x1024x896 split over the cores, v5p 2x2x4|gen matmul --chip v5p --m 256 --k 1024 --n 896 --split-cores|--chip v5p --topology 2x2x4"
)
for c in "${cases[@]}"; do
  IFS='|' read -r what make run <<< "$c"
  if [[ $make == collective* ]]; then
    # shellcheck disable=SC2086
    "$tpuemu" $make --no-data --program program.llo > /dev/null
  else
    # shellcheck disable=SC2086
    "$tpuemu" $make -o program.llo
  fi
  first=""
  for quantum in 1 64 1000 100000; do
    # shellcheck disable=SC2086
    cycles=$("$tpuemu" run program.llo $run --no-data --quantum "$quantum" | awk '$1 == "cycles" {print $2}')
    [[ -n "$cycles" ]] || { echo "FAIL: $what: no cycles reported at quantum $quantum"; exit 1; }
    first=${first:-$cycles}
    if [[ "$cycles" != "$first" ]]; then
      echo "FAIL: $what: $cycles cycles at quantum $quantum, $first at quantum 1"
      exit 1
    fi
  done
  echo "$what: $first cycles at every quantum"
done
echo PASS
