#!/usr/bin/env bash
# signal_after_run.sh TPUEMU SHIM MM_ARGS...: a SIGINT that comes after the
# emulation has ended (sent by the LD_PRELOAD shim at the first
# fflush(stdout), right after the report) stops nothing: the outputs are
# written whole, the run says that the signal came when no emulation was left
# to stop, and it exits 130 as a stopped run does.
set -u
tpuemu=$1 shim=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }
rm -f after_signal.npy plain.npy
LD_PRELOAD=$shim "$tpuemu" run "$@" --out 2=after_signal.npy > out.txt 2> err.txt
rc=$?
[[ $rc -eq 130 ]] || { cat out.txt err.txt; fail "exit code $rc, expected 130"; }
grep -q "^tpuemu run: SIGINT came when no emulation was left to stop: the output above is complete$" err.txt ||
  { cat err.txt; fail "no message saying the signal stopped nothing"; }
grep -Eq "^cycles +[0-9]+" out.txt || { cat out.txt; fail "the report is missing"; }
# The same run without the signal: the same report and the same output file, byte for byte.
"$tpuemu" run "$@" --out 2=plain.npy > plain_out.txt 2> plain_err.txt || { cat plain_err.txt; fail "the plain run failed"; }
cmp -s after_signal.npy plain.npy || fail "the output written after the signal differs from a plain run's"
diff <(grep -v "^host" out.txt) <(grep -v "^host" plain_out.txt) > /dev/null || {
  diff out.txt plain_out.txt
  fail "the report differs from a plain run's"
}
# Without the shim nothing is said about a signal.
if grep -q "SIGINT" plain_err.txt; then fail "a plain run mentions SIGINT"; fi
echo "signal after the run: ok"
