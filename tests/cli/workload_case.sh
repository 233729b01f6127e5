#!/usr/bin/env bash
# One sharded-matmul case on a pod: exit 0, every chip's C bit-exact against
# the host reference, and exactly the communication the book's case says,
# read from the --json report.
# Usage: workload_case.sh TPUEMU WORKDIR CASE PLAN COMMS [NO_DATA_TOO] -- WORKLOAD ARGS...
#   COMMS: the communication phases' ops in order, comma-separated ("none": no phase, no ICI byte).
#   NO_DATA_TOO: "no-data" also runs it timing-only and requires the same cycles.
set -euo pipefail
tpuemu=$1 work=$2 case=$3 plan=$4 comms=$5
shift 5
no_data=""
if [ "$1" = no-data ]; then no_data=1; shift; fi
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" workload "$@" --json report.json || fail "exit code $? (want 0)"
j() { jq -r "$1" report.json; }
[ "$(j .case)" = "$case" ] || fail "case $(j .case), want $case"
[ "$(j .plan)" = "$plan" ] || fail "plan $(j .plan), want $plan"
[ "$(j .ok)" = true ] || fail "check: $(j .check)"
case "$(j .check)" in bit-exact*) ;; *) fail "check: $(j .check)" ;; esac
got=$(j '[.phases[] | select(.kind == "communication") | .op] | join(",")')
[ "${got:-none}" = "$comms" ] || fail "communication '${got:-none}', want '$comms'"
[ "$(j '[.phases[] | select(.kind == "compute")] | length')" = 1 ] || fail "want one matmul phase"
if [ "$comms" = none ]; then
  [ "$(j .ici_bytes)" = 0 ] || fail "ICI bytes $(j .ici_bytes) without communication"
else
  [ "$(j .ici_bytes)" -gt 0 ] || fail "no ICI bytes"
  [ "$(j '[.phases[] | select(.kind == "communication") | .ici_bytes] | add')" = "$(j .ici_bytes)" ] ||
    fail "the communication phase does not carry every ICI byte"
fi
# Every phase was measured and predicted; the run's own report is inside.
[ "$(j '[.phases[] | select(.seconds > 0 and .predicted_seconds > 0)] | length')" = "$(j '.phases | length')" ] ||
  fail "a phase without a measurement or prediction"
[ "$(j .report.schema)" = tpuemu-report ] || fail "no run report inside"
# Every collective started on all chips within one hop latency (no barrier between steps).
[ "$(j '.warnings | length')" = 0 ] || fail "warnings: $(j '.warnings | join("; ")')"
if [ -n "$no_data" ]; then
  "$tpuemu" workload "$@" --no-data --json timing.json > /dev/null || fail "--no-data exit code $?"
  [ "$(jq .cycles timing.json)" = "$(j .cycles)" ] || fail "--no-data cycles $(jq .cycles timing.json), with data $(j .cycles)"
  [ "$(jq -r .check timing.json)" = "skipped (--no-data)" ] || fail "--no-data check $(jq -r .check timing.json)"
fi
echo PASS
