#!/usr/bin/env bash
# The attention workload on a pod: exit 0, every output bit-exact against the
# host reference, 2 + 2 x B x (heads per chip) matmuls and B x (heads per
# chip) softmax programs, exactly one collective (all-reduce, or
# reduce-scatter with --plan rs) of the f32 partial out[B*T, D] over the model
# axes (or no communication when the heads are not split), and the same
# cycles without data.
# Usage: workload_attention.sh TPUEMU WORKDIR COMM -- ARGS...
#   COMM: the collective and its axes as the report names them ("all-reduce:YX",
#   "reduce-scatter:X"), or "none".
set -euo pipefail
tpuemu=$1 work=$2 comm=$3
shift 3
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" workload attention "$@" --json report.json || fail "exit code $? (want 0)"
j() { jq -r "$1" report.json; }
[ "$(j .ok)" = true ] || fail "check: $(j .check)"
case "$(j .check)" in bit-exact*) ;; *) fail "check: $(j .check)" ;; esac
heads=$(( $(j .batch) * $(j .per_chip.heads) ))
[ "$(j '[.phases[] | select(.kind == "compute" and .k != null)] | length')" = "$(( 2 + 2 * heads ))" ] ||
  fail "$(j '[.phases[] | select(.kind == "compute" and .k != null)] | length') matmuls, want $(( 2 + 2 * heads ))"
[ "$(j '[.phases[] | select(.op == "softmax")] | length')" = "$heads" ] ||
  fail "$(j '[.phases[] | select(.op == "softmax")] | length') softmax steps, want $heads (one per sequence and local head)"
[ "$(j '.per_chip.heads * .model_ways')" = "$(j .heads)" ] || fail "heads per chip x ways != heads"
got=$(j '[.phases[] | select(.kind == "communication") | "\(.op):\(.axes):\(.dtype):\(.bytes)"] | join(",")')
if [ "$comm" = none ]; then
  [ -z "$got" ] || fail "communication '$got', want none"
  [ "$(j .ici_bytes)" = 0 ] || fail "ICI bytes $(j .ici_bytes) without communication"
else
  want="$comm:f32:$(j '.batch * .seq * .d_model * 4')"
  [ "$got" = "$want" ] || fail "communication '$got', want '$want' (one collective of the partial out[B*T, D] in f32)"
  [ "$(j .ici_bytes)" -gt 0 ] || fail "no ICI bytes"
fi
[ "$(j '[.phases[] | select(.seconds > 0 and .predicted_seconds > 0)] | length')" = "$(j '.phases | length')" ] ||
  fail "a phase without a measurement or prediction"
[ "$(j '.book.t_math_seconds > 0')" = true ] || fail "no book T_math"
[ "$(j '.warnings | length')" = 0 ] || fail "warnings: $(j '.warnings | join("; ")')"
"$tpuemu" workload attention "$@" --no-data --json timing.json > /dev/null || fail "--no-data exit code $?"
[ "$(jq .cycles timing.json)" = "$(j .cycles)" ] || fail "--no-data cycles $(jq .cycles timing.json), with data $(j .cycles)"
echo "PASS: attention on $(j .topology), heads over $(j .model_axes): $(j .check); comms ${got:-none}"
