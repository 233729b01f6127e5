#!/usr/bin/env bash
# Issue 16's collective-matmul acceptance: the overlapped variant within 1.15x
# of the unsharded-contracting baseline where the per-chip compute time
# exceeds the shift time. v5e 2x4 (no wraparound), the book's B and D (1024,
# 2048), timing only. At the book's F = 8192 a chunk's matmul (5.5 us at the
# roofline) is shorter than a shift of the 512 KiB chunk (13.7 us: the folded
# Y ring's hops span up to 2 links), so the condition does not hold there:
# that ratio is printed, not asserted. At F = 24576 and 32768 a chunk
# computes for 16.4 / 21.8 us (the report's chunk_seconds, the roofline's
# 1/N) against the same 13.7 us shift (t_shift_seconds); the script asserts
# the condition from the report, then overlapped / baseline <= 1.15, and
# prints "ACCEPTANCE MET: ..." with the figures.
# Usage: collective_matmul_acceptance.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
args=(--chip v5e --topology 2x4 --m 1024 --k 2048 --no-data)
ratio() { awk -v o="$1" -v b="$2" 'BEGIN { printf "%.3f", o / b }'; }
met=()
for n in 8192 24576 32768; do
  for v in overlapped baseline; do
    "$tpuemu" workload collective-matmul "${args[@]}" --n $n --variant $v --json $v-$n.json > /dev/null ||
      fail "F=$n $v: exit code $?"
  done
  o=$(jq .seconds overlapped-$n.json) b=$(jq .seconds baseline-$n.json)
  chunk=$(jq '.phases[0].chunk_seconds' overlapped-$n.json) shift=$(jq '.phases[0].t_shift_seconds' overlapped-$n.json)
  r=$(ratio "$o" "$b")
  line="F=$n: overlapped $(awk -v s="$o" 'BEGIN { printf "%.2f", s * 1e6 }') us, baseline $(awk -v s="$b" 'BEGIN { printf "%.2f", s * 1e6 }') us, ratio $r (chunk $(awk -v s="$chunk" 'BEGIN { printf "%.1f", s * 1e6 }') us vs shift $(awk -v s="$shift" 'BEGIN { printf "%.1f", s * 1e6 }') us)"
  echo "$line"
  if [ $n = 8192 ]; then
    awk -v c="$chunk" -v s="$shift" 'BEGIN { exit !(c < s) }' || fail "F=8192: expected shift-bound ($line)"
    continue
  fi
  awk -v c="$chunk" -v s="$shift" 'BEGIN { exit !(c > s) }' || fail "F=$n: compute does not exceed the shift ($line)"
  awk -v r="$r" 'BEGIN { exit !(r <= 1.15) }' || fail "F=$n: overlapped over 1.15x the baseline ($line)"
  met+=("F=$n ratio $r")
done
echo "ACCEPTANCE MET: overlapped within 1.15x of the baseline where a chunk's compute exceeds the shift (${met[*]})"
