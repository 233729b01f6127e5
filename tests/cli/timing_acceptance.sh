#!/usr/bin/env bash
# Timing acceptance of the single-chip model (issue 4), on the v5e preset:
#  1. a 4096^3 bf16 matmul reaches >= 90% of MXU peak: measured <= 1.11 x 2MNK / peak;
#  2. the same without double buffering is measurably slower, and its report
#     shows why (sync-flag waits);
#  3. a matmul with M = 64 is HBM-bound;
#  4. an HBM-bound add moves bytes at >= 90% of the HBM bandwidth (ADD_N elements).
# Usage: timing_acceptance.sh TPUEMU WORKDIR [ADD_N]
set -euo pipefail
tpuemu=$1 work=$2 add_n=${3:-8388608}
here=$(dirname "$0")
num() { bash "$here/json_number.sh" "$@"; }
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

zeros_npy() {  # zeros_npy FILE DESCR SHAPE BYTES
  local header="{'descr': '$2', 'fortran_order': False, 'shape': ($3), }"
  local len=$(( ${#header} + 1 ))
  local pad=$(( (64 - (10 + len) % 64) % 64 ))
  { printf '\x93NUMPY\x01\x00'; printf "\\x$(printf %02x $(( (len + pad) % 256 )))\\x$(printf %02x $(( (len + pad) / 256 )))";
    printf '%s' "$header"; printf '%*s' "$pad" ''; printf '\n'; } > "$1"
  truncate -s +"$4" "$1"
}

zeros_npy a.npy '<u2' '4096, 4096' $((4096 * 4096 * 2))
cp a.npy b.npy
zeros_npy a64.npy '<u2' '64, 4096' $((64 * 4096 * 2))

"$tpuemu" gen matmul --m 4096 --k 4096 --n 4096 -o mm.llo
"$tpuemu" run mm.llo --no-data --in 0=a.npy --in 1=b.npy --report mm.json > mm.txt
ratio=$(num mm.json measured_over_predicted)
cat mm.txt
awk -v r="$ratio" 'BEGIN { exit !(r <= 1.11) }' || fail "4096^3 matmul: measured/predicted = $ratio > 1.11"
grep -q '"bound": "MXU compute"' mm.json || fail "4096^3 matmul is not reported MXU compute-bound"

"$tpuemu" gen matmul --m 4096 --k 4096 --n 4096 --no-double-buffer -o mm_ndb.llo
"$tpuemu" run mm_ndb.llo --no-data --in 0=a.npy --in 1=b.npy --report mm_ndb.json > mm_ndb.txt
cat mm_ndb.txt
c1=$(num mm.json cycles) c2=$(num mm_ndb.json cycles)
awk -v a="$c1" -v b="$c2" 'BEGIN { exit !(b > 1.2 * a) }' || fail "no double buffering: $c2 cycles is not measurably slower than $c1"
wait_cycles=$(num mm_ndb.json "sync-flag wait")
awk -v w="$wait_cycles" -v c="$c2" 'BEGIN { exit !(w > 0.25 * c) }' || fail "no double buffering: sync-flag waits $wait_cycles of $c2 cycles do not explain the slowdown"

"$tpuemu" gen matmul --m 64 --k 4096 --n 4096 -o mm64.llo
"$tpuemu" run mm64.llo --no-data --in 0=a64.npy --in 1=b.npy --report mm64.json > mm64.txt
cat mm64.txt
grep -q '"bound": "HBM bandwidth"' mm64.json || fail "M = 64 matmul is not reported HBM-bound"

zeros_npy x.npy '<f4' "$add_n," $((add_n * 4))
cp x.npy y.npy
"$tpuemu" gen add --n "$add_n" -o add.llo
"$tpuemu" run add.llo --no-data --in 0=x.npy --in 1=y.npy --report add.json > add.txt
cat add.txt
hbm_s=$(num add.json hbm_seconds) total_s=$(num add.json seconds)
awk -v h="$hbm_s" -v t="$total_s" 'BEGIN { exit !(h / t >= 0.9) }' || fail "add: HBM at $(awk -v h="$hbm_s" -v t="$total_s" 'BEGIN{print 100*h/t}')% of bandwidth"
echo "PASS"
