#!/usr/bin/env bash
# One mlp strategy on a pod: exit 0, every output bit-exact against the host
# reference, exactly the communication the strategy needs (the communication
# phases' ops and axes, in order, from --json), and the same cycles without data.
# Usage: workload_mlp.sh TPUEMU WORKDIR COMMS -- ARGS...
#   COMMS: "op:axes" of every communication phase, comma-separated ("none" for none).
set -euo pipefail
tpuemu=$1 work=$2 comms=$3
shift 3
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" workload mlp "$@" --json report.json || fail "exit code $? (want 0)"
j() { jq -r "$1" report.json; }
[ "$(j .ok)" = true ] || fail "check: $(j .check)"
case "$(j .check)" in bit-exact*) ;; *) fail "check: $(j .check)" ;; esac
got=$(j '[.phases[] | select(.kind == "communication") | "\(.op):\(.axes)"] | join(",")')
[ "${got:-none}" = "$comms" ] || fail "communication '${got:-none}', want '$comms'"
[ "$(j '[.phases[] | select(.kind == "compute" and (.name | startswith("fwd") or startswith("bwd")))] | length')" = 7 ] ||
  fail "want 6 matmuls and the residual add"
if [ "$comms" = none ]; then
  [ "$(j .ici_bytes)" = 0 ] || fail "ICI bytes $(j .ici_bytes) without communication"
else
  [ "$(j .ici_bytes)" -gt 0 ] || fail "no ICI bytes"
fi
[ "$(j '[.phases[] | select(.seconds > 0 and .predicted_seconds > 0)] | length')" = "$(j '.phases | length')" ] ||
  fail "a phase without a measurement or prediction"
[ "$(j '.warnings | length')" = 0 ] || fail "warnings: $(j '.warnings | join("; ")')"
"$tpuemu" workload mlp "$@" --no-data --json timing.json > /dev/null || fail "--no-data exit code $?"
[ "$(jq .cycles timing.json)" = "$(j .cycles)" ] || fail "--no-data cycles $(jq .cycles timing.json), with data $(j .cycles)"
echo "PASS: $(j .strategy) on $(j .topology): $(j .check); comms $comms"
