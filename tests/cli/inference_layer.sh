#!/usr/bin/env bash
# The inference-layer workload with data on small v5e pods: every chip's out
# bit-exact against the host reference, unsharded (one chip; an odd number of
# f32 tiles for the cast) and with d_ff split over one mesh axis (an
# all-reduce of out over that axis only, replicas on the other; sizes that are
# not whole tiles), and the timing-only run the same cycles.
# Usage: inference_layer.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
j() { jq -r "$2" "$1.json"; }
run() {  # NAME ARGS...: runs with data, requires a bit-exact out and no warning
  local name=$1
  shift
  "$tpuemu" workload inference-layer "$@" --json "$name.json" > "$name.txt" || fail "$name: exit code $?"
  [ "$(j "$name" .ok)" = true ] || fail "$name: $(j "$name" .check)"
  case "$(j "$name" .check)" in bit-exact*) ;; *) fail "$name: $(j "$name" .check)" ;; esac
  [ "$(j "$name" '.warnings | length')" = 0 ] || fail "$name: warnings $(j "$name" '.warnings')"
}
run one --topology 1 --batch 24 --d-model 256 --d-ff 384 --model-axis none
[ "$(j one '[.phases[].name] | join(";")')" = "up: x @ W_in 24x256x384;cast h to bf16 24x384;down: h @ W_out 24x384x256" ] ||
  fail "one: phases $(j one '[.phases[].name]')"
[ "$(j one .ici_bytes)" = 0 ] || fail "one: ICI bytes $(j one .ici_bytes)"
[ "$(j one .check)" = "bit-exact (6144 elements of out on 1 chips)" ] || fail "one: $(j one .check)"

run model_x --topology 4 --batch 32 --d-model 256 --d-ff 1024 --model-axis X
[ "$(j model_x '[.phases[] | select(.kind == "communication") | .op] | join(",")')" = all-reduce ] ||
  fail "model_x: communication $(j model_x '[.phases[] | select(.kind == "communication") | .op]')"
[ "$(j model_x .per_chip.d_ff)" = 256 ] || fail "model_x: d_ff per chip $(j model_x .per_chip.d_ff)"
[ "$(j model_x .ici_bytes)" -gt 0 ] || fail "model_x: no ICI bytes"

# d_ff over Y on a 2x2: two replicas (X) of a 2-way split; the all-reduce runs over Y alone.
run model_y --topology 2x2 --batch 16 --d-model 256 --d-ff 512 --model-axis Y
[ "$(j model_y '.phases[3].axes')" = Y ] || fail "model_y: all-reduce over $(j model_y '.phases[3].axes')"
[ "$(j model_y .model_ways)" = 2 ] || fail "model_y: $(j model_y .model_ways) ways"

# Sizes off the tiles: the all-reduce covers the padded f32 tiles, so every element of out is reduced.
run padded --topology 4 --batch 7 --d-model 250 --d-ff 520 --model-axis X
[ "$(j padded .check)" = "bit-exact (7000 elements of out on 4 chips)" ] || fail "padded: $(j padded .check)"

"$tpuemu" workload inference-layer --topology 4 --batch 32 --d-model 256 --d-ff 1024 --model-axis X --no-data \
  --json timing.json > /dev/null || fail "--no-data: exit code $?"
[ "$(jq .cycles timing.json)" = "$(j model_x .cycles)" ] || fail "--no-data cycles $(jq .cycles timing.json), with data $(j model_x .cycles)"
echo PASS
