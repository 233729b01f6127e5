#!/usr/bin/env bash
# The end-to-end figure of bench/README.md: host wall time of `tpuemu run` of
# a generated 2048^3 bf16 matmul on one v5e with .npy inputs, .npy output and
# --expect, beside numpy's OpenBLAS sgemm 2048^3 (bench/openblas_sgemm.py),
# alternating, in the same session. Prints the load average before and after.
# Usage: bench/run_vs_openblas.sh [BUILD_DIR] [ROUNDS]   (default build, 5)
#   TPUEMU_HOST_THREADS as for tpuemu (default: the host's hardware concurrency)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
tpuemu=$build/bin/tpuemu
dir=${TMPDIR:-/tmp}/tpuemu_bench_mm
mkdir -p "$dir"
if [[ ! -f $dir/mm.llo || ! -f $dir/mm.expected.npy ]]; then
  "$tpuemu" gen matmul --m 2048 --k 2048 --n 2048 --inputs "$dir/mm" -o "$dir/mm.llo"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
runs=()
for ((i = 0; i < rounds; ++i)); do
  start=$(date +%s.%N)
  "$tpuemu" run "$dir/mm.llo" --chip v5e --in 0="$dir/mm.a.npy" --in 1="$dir/mm.b.npy" \
    --out 2="$dir/mm.out.npy" --expect 2="$dir/mm.expected.npy" | grep -q "bit-exact"
  end=$(date +%s.%N)
  runs+=("$(echo "$end - $start" | bc)")
  /usr/bin/python3 bench/openblas_sgemm.py 2048 | sed 's/^/openblas: /'
done
echo "tpuemu run (TPUEMU_HOST_THREADS=${TPUEMU_HOST_THREADS:-default}): ${runs[*]} s"
printf '%s\n' "${runs[@]}" | sort -n | awk '{v[NR]=$1} END {printf "tpuemu run: best %.3f s, median %.3f s of %d\n", v[1], v[int((NR+1)/2)], NR}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
