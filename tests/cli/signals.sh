#!/usr/bin/env bash
# signals.sh TPUEMU PROGRAM: SIGINT and SIGTERM stop a run as a fault would
# (the message names core, bundle, source line and cycle; exit 128 + signal),
# and no forked child outlives its parent.
set -u
tpuemu=$1 program=$2
fail() { echo "FAIL: $*"; exit 1; }

# expect_stop SIGNAL CODE ARGS...: runs tpuemu, sends SIGNAL after 1 s.
expect_stop() {
  local signal=$1 code=$2
  shift 2
  "$tpuemu" "$@" > out.txt 2> err.txt &
  local pid=$!
  sleep 1
  kill "-$signal" "$pid"
  local waited=0
  while kill -0 "$pid" 2> /dev/null; do
    sleep 0.1
    waited=$((waited + 1))
    [[ $waited -lt 100 ]] || { kill -9 "$pid"; fail "$signal: still running 10 s after the signal"; }
  done
  wait "$pid"
  local rc=$?
  [[ $rc -eq $code ]] || { cat err.txt; fail "$signal: exit code $rc, expected $code"; }
  grep -Eq "interrupted by SIG$signal: chip [0-9]+ core 0 bundle 0x0 \(.*endless_loop.llo:3\) at cycle [0-9]+" err.txt ||
    { cat err.txt; fail "$signal: no fault-style message"; }
  if pgrep -f -- "max-cycles 999999999999" > /dev/null; then fail "$signal: a child outlived the run"; fi
}

expect_stop INT 130 run "$program" --max-cycles 999999999999 --report signals_report.json
# A pod run with a trace: the stop reaches the forked dry run, then the run itself.
expect_stop TERM 143 run "$program" --topology 4 --trace signals.json --trace-window 0:1000 --max-cycles 999999999999
# A traced run first counts its events in a timing-only dry run: a stop there ends the run at the
# dry run's cycle (it reported the traced run's first quantum, "at cycle 1000", and traced that).
rm -f signals_dry.json
expect_stop INT 130 run "$program" --trace signals_dry.json --max-cycles 999999999999
grep -Eq "at cycle [0-9]{5,} \(in --trace signals_dry.json's timing-only dry run, .*nothing was traced\)" err.txt ||
  { cat err.txt; fail "INT in the trace's dry run: not reported as the dry run's stop"; }
[[ ! -e signals_dry.json ]] || fail "INT in the trace's dry run: a trace was written"
echo "signals: ok"
