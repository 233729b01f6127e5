#!/usr/bin/env bash
# Waveforms open in GTKWave's tools: a chip run and a pod run write VCDs that
# vcd2fst converts, with the signals a student looks for changing over time.
# Usage: vcd_check.sh TPUEMU WORKDIR PROGRAMS_DIR DATA_DIR
set -euo pipefail
tpuemu=$1 work=$2 programs=$3 data=$4
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
command -v vcd2fst > /dev/null || fail "vcd2fst (Debian package gtkwave) is not installed: run tools/setup.sh"

"$tpuemu" run "$programs/matmul_8x128.llo" --in 0="$data/x_8x128.npy" --in 1="$data/w_128x128.npy" --vcd chip.vcd > chip.txt
vcd2fst chip.vcd chip.fst || fail "vcd2fst rejected chip.vcd"
[ -s chip.fst ] || fail "vcd2fst wrote no chip.fst"
for signal in "pc \[31:0\]" "busy" "result_fifo \[31:0\]" "dmas_in_flight \[31:0\]" "sflag0 \[31:0\]"; do
  grep -q "\$var wire .* $signal" chip.vcd || fail "chip.vcd has no signal '$signal'"
done
# The pc changes at many times; the MXU's busy bit rises and falls.
[ "$(grep -c '^#' chip.vcd)" -gt 20 ] || fail "chip.vcd has too few time steps"
mxu=$(grep '\$var wire *1 .* busy' chip.vcd | head -1 | awk '{print $4}')
grep -q "^1$mxu\$" chip.vcd || fail "no MXU busy pulse in chip.vcd"

"$tpuemu" run "$programs/ring_shift.llo" --topology 4 --wrap x --vcd pod.vcd > pod.txt
vcd2fst pod.vcd pod.fst || fail "vcd2fst rejected pod.vcd"
grep -q '\$scope module chip3 \$end' pod.vcd || fail "pod.vcd has no scope for chip 3"
link=$(grep '\$var wire *1 .* busy' pod.vcd | grep -A0 "" | awk '{print $4}' | tail -1)
grep -q "^1$link\$" pod.vcd || fail "no ICI link busy pulse in pod.vcd"
# A switched pod: a busy bit per NVLink, the switches' own in scopes named after them.
"$tpuemu" run "$data/nvls_reduce.llo" --chip h100 --topology node:4 --vcd switched.vcd --trace switched.json > switched.txt
vcd2fst switched.vcd switched.fst || fail "vcd2fst rejected switched.vcd"
grep -q '\$scope module nvswitch0 \$end' switched.vcd || fail "switched.vcd has no scope for nvswitch 0"
grep -q '"nvswitch 0"' switched.json || fail "switched.json has no process for nvswitch 0"
grep -q '"nvlink -> nvswitch 0"' switched.json || fail "switched.json has no track for chip 0's link to nvswitch 0"
"$tpuemu" systolic --n 8 --rows 8 --vcd systolic.vcd > systolic.txt
vcd2fst systolic.vcd systolic.fst || fail "vcd2fst rejected systolic.vcd"
grep -q 'psum_q' systolic.vcd || fail "systolic.vcd has no PE partial sums"
# The RTL array inside a chip run (--mxu rtl on edu): the chip's VCD and the
# array's own (every PE register) on one time axis.
"$tpuemu" gen matmul --chip edu --m 16 --k 16 --n 16 --inputs edu -o edu.llo
"$tpuemu" run edu.llo --chip edu --mxu rtl --in 0=edu.a.npy --in 1=edu.b.npy --expect 2=edu.expected.npy \
  --vcd edu_chip.vcd --rtl-vcd edu_rtl.vcd > edu.txt || fail "edu --mxu rtl run failed: $(cat edu.txt)"
vcd2fst edu_chip.vcd edu_chip.fst || fail "vcd2fst rejected edu_chip.vcd"
vcd2fst edu_rtl.vcd edu_rtl.fst || fail "vcd2fst rejected edu_rtl.vcd"
grep -q 'psum_q' edu_rtl.vcd || fail "edu_rtl.vcd has no PE partial sums"
grep -q 'lhs_valid' edu_rtl.vcd || fail "edu_rtl.vcd has no LHS handshake"
[ "$(grep -c '^#' edu_rtl.vcd)" -gt 100 ] || fail "edu_rtl.vcd has too few time steps"
echo PASS
