#!/usr/bin/env bash
# A timing-only run (--no-data) pays no host memory for tensor data: peak RSS
# does not grow with the operands' size. Compares a small and a large run of
# the same program kind (the difference, not an absolute figure, so the test
# holds under ASan's shadow memory too). Before the fix the large runs below
# peaked ~270 MB (run: every HBM operand collected as zeros) and ~1 GB
# (workload: the host tensors made eagerly) above the small ones.
# Usage: no_data_memory.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
limit_kib=$((64 * 1024))
# Under ASan, freed blocks wait in a quarantine of up to 256 MiB, which the
# larger runs' bigger programs and temporaries fill: keep it small so peak RSS
# measures what is live (no effect without ASan).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
# Python: Debian's interpreter where there is one (a `python3` earlier on
# PATH may be a pyenv shim, ~0.4 s of CPU in bash start-ups per call).
python=/usr/bin/python3; [[ -x $python ]] || python=python3
peak_kib() {  # peak RSS of one run of "$@", in KiB
  "$python" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$@"
}
check() {  # NAME SMALL_KIB LARGE_KIB
  echo "$1: small $2 KiB, large $3 KiB"
  (($3 - $2 < limit_kib)) || { echo "FAIL: $1: the large run's peak RSS grew by $(($3 - $2)) KiB (limit $limit_kib)"; exit 1; }
}
# tpuemu run: A is 12544 x 8192 bf16 (205 MB), C 12544 x 1024 f32 (51 MB).
"$tpuemu" gen matmul --chip v5p --m 256 --k 8192 --n 1024 -o small.llo
"$tpuemu" gen matmul --chip v5p --m 12544 --k 8192 --n 1024 -o large.llo
check "run" "$(peak_kib "$tpuemu" run small.llo --chip v5p --no-data)" \
  "$(peak_kib "$tpuemu" run large.llo --chip v5p --no-data)"
# tpuemu workload: 16384 tokens of d_model 8192 are 512 MiB of f32 per host tensor.
mlp=(workload mlp --strategy dp --chip v5e --topology 2 --d-model 8192 --d-ff 256 --no-data)
check "workload mlp" "$(peak_kib "$tpuemu" "${mlp[@]}" --batch 1024)" "$(peak_kib "$tpuemu" "${mlp[@]}" --batch 16384)"
sm=(workload sharded-matmul --chip v5e --topology 2 --k 8192 --n 256 --lhs 'I_X,J' --rhs 'J,K' --no-data)
check "workload sharded-matmul" "$(peak_kib "$tpuemu" "${sm[@]}" --m 1024)" "$(peak_kib "$tpuemu" "${sm[@]}" --m 16384)"
echo PASS
