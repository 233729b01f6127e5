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
# The anchor must be OpenBLAS: without libopenblas0-pthread, numpy loads Debian's reference BLAS
# (~60x slower) and the comparison would mean nothing.
blas=$(/usr/bin/python3 bench/openblas_sgemm.py 64)
if [[ $blas != *openblas* ]]; then
  echo "run_vs_openblas.sh: numpy did not load OpenBLAS ($blas); install it: apt-get install libopenblas0-pthread" >&2
  exit 2
fi
# OpenBLAS 0.3.21 (Debian 12) does not know every CPU it meets: on a Sapphire Rapids VM that names
# itself "Intel(R) Xeon(R) Processor" it falls back to its generic Prescott kernels (0.40-0.55 s
# for 2048^3 instead of 0.066 s with the SkylakeX ones, session 21). Unless the caller chose
# OPENBLAS_CORETYPE, pick the best kernel family the CPU's flags allow when it falls back.
if [[ -z ${OPENBLAS_CORETYPE:-} ]]; then
  core=$(OPENBLAS_VERBOSE=2 /usr/bin/python3 bench/openblas_sgemm.py 64 2>&1 | sed -n 's/^Core: //p' | head -1)
  if [[ $core == Prescott ]]; then
    if grep -qw avx512f /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=SkylakeX
    elif grep -qw avx2 /proc/cpuinfo; then
      export OPENBLAS_CORETYPE=Haswell
    fi
  fi
  echo "OpenBLAS core: ${core:-unknown}${OPENBLAS_CORETYPE:+, forced to $OPENBLAS_CORETYPE (its detection fell back to generic kernels)}"
fi
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
tpuemu_run() {
  "$tpuemu" run "$dir/mm.llo" --chip v5e --in 0="$dir/mm.a.npy" --in 1="$dir/mm.b.npy" \
    --out 2="$dir/mm.out.npy" --expect 2="$dir/mm.expected.npy" | grep -q "bit-exact"
}
# One untimed run first (its time printed, not counted), as the anchor makes
# an untimed warm-up call (bench/openblas_sgemm.py): on a VM with free page reporting (virtio
# balloon) memory freed a few seconds before is handed back to the host, and
# the first run after an idle spell pays the host's page faults in the guest's
# page clearing (bench/README.md session 31: 0.20-0.25 s of system time after
# 5-20 s idle, 0.01-0.07 s back to back).
start=$(date +%s.%N)
tpuemu_run
echo "tpuemu run, warm-up (not counted): $(echo "$(date +%s.%N) - $start" | bc) s"
runs=()
blas_runs=()  # OpenBLAS best of 5 per round
for ((i = 0; i < rounds; ++i)); do
  start=$(date +%s.%N)
  tpuemu_run
  end=$(date +%s.%N)
  runs+=("$(echo "$end - $start" | bc)")
  line=$(/usr/bin/python3 bench/openblas_sgemm.py 2048)
  echo "openblas: $line"
  blas_runs+=("$(sed -n 's/.*best \([0-9.]*\) s of.*/\1/p' <<<"$line")")
done
echo "tpuemu run (TPUEMU_HOST_THREADS=${TPUEMU_HOST_THREADS:-default}): ${runs[*]} s"
best_of() { printf '%s\n' "$@" | sort -n | head -1; }
median_of() { printf '%s\n' "$@" | sort -n | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
printf 'tpuemu run: best %.3f s, median %.3f s of %d\n' "$(best_of "${runs[@]}")" "$(median_of "${runs[@]}")" "${#runs[@]}"
echo "openblas: best $(best_of "${blas_runs[@]}") s, median of the rounds' bests $(median_of "${blas_runs[@]}") s"
awk -v tb="$(best_of "${runs[@]}")" -v tm="$(median_of "${runs[@]}")" -v bb="$(best_of "${blas_runs[@]}")" \
  -v bm="$(median_of "${blas_runs[@]}")" 'BEGIN {printf "ratio: %.2fx best against best, %.2fx median against median\n", tb / bb, tm / bm}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
