#!/usr/bin/env bash
# --no-data (timing only) gives the same emulated times as a run that moves
# and reduces real data, for every collective.
# Usage: collective_no_data.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
values() { grep -o "\"$2\": *-\?[0-9.eE+-]*" "$1" | sed 's/.*: *//'; }
for op in all-gather reduce-scatter all-reduce all-to-all; do
  "$tpuemu" collective --op $op --topology 2x4 --dtype bf16 --sizes 64K,512K --json "$op.data.json" > /dev/null
  "$tpuemu" collective --op $op --topology 2x4 --dtype bf16 --sizes 64K,512K --no-data --json "$op.nodata.json" > /dev/null
  grep -q '"check": "bit-exact"' "$op.data.json" || { echo "FAIL: $op result check"; exit 1; }
  [ "$(values "$op.data.json" cycles)" = "$(values "$op.nodata.json" cycles)" ] ||
    { echo "FAIL: $op: cycles differ with --no-data"; values "$op.data.json" cycles; values "$op.nodata.json" cycles; exit 1; }
done
# f32 (the hand-placed add loop) and pieces spanning units, on a v5p cube.
for op in all-gather all-reduce; do
  "$tpuemu" collective --op $op --chip v5p --topology 4x4x4 --sizes 32K,1M --json "$op.f32.data.json" > /dev/null
  "$tpuemu" collective --op $op --chip v5p --topology 4x4x4 --sizes 32K,1M --no-data --json "$op.f32.nodata.json" > /dev/null
  [ "$(grep -c '"check": "bit-exact"' "$op.f32.data.json")" = 2 ] || { echo "FAIL: $op f32 result check"; exit 1; }
  [ "$(values "$op.f32.data.json" cycles)" = "$(values "$op.f32.nodata.json" cycles)" ] ||
    { echo "FAIL: $op f32: cycles differ with --no-data"; exit 1; }
done
echo PASS
