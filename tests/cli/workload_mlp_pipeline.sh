#!/usr/bin/env bash
# mlp --strategy pp: bit-exact with data (and the same cycles without), and
# the book's bubble (S-1)/(M+S-1) within 25 % in the measured step: every
# stage's share of the run outside its microbatches' slots, for each M given,
# and the step time of M microbatches against the one of 1.
# Usage: workload_mlp_pipeline.sh TPUEMU WORKDIR "M1 M2 ..." -- ARGS...
set -euo pipefail
tpuemu=$1 work=$2 ms=$3
shift 3
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
first=${ms%% *}
"$tpuemu" workload mlp --strategy pp --microbatches "$first" "$@" --json data.json > /dev/null || fail "exit code $?"
[ "$(jq -r .ok data.json)" = true ] || fail "check: $(jq -r .check data.json)"
case "$(jq -r .check data.json)" in bit-exact*) ;; *) fail "check: $(jq -r .check data.json)" ;; esac
for m in $ms; do
  "$tpuemu" workload mlp --strategy pp --microbatches "$m" "$@" --no-data --json "m$m.json" > /dev/null ||
    fail "--microbatches $m: exit code $?"
  jq -r '"M \(.microbatches): step \(.seconds * 1e6) us, bubble measured \(.pipeline.bubble_fraction) per stage \(.pipeline.bubble_fraction_per_stage), the book \(.pipeline.bubble_fraction_book)"' "m$m.json"
  jq -e '.pipeline.bubble_fraction_per_stage | length > 0' "m$m.json" > /dev/null || fail "no measured bubble"
  jq -e '.pipeline.bubble_fraction_book as $b | all(.pipeline.bubble_fraction_per_stage[]; . >= 0.75 * $b and . <= 1.25 * $b)' \
    "m$m.json" > /dev/null || fail "--microbatches $m: a stage's bubble is more than 25 % from the book's"
done
[ "$(jq .cycles "m$first.json")" = "$(jq .cycles data.json)" ] || fail "--no-data cycles differ"
echo PASS
