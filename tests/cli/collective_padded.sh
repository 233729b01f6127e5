#!/usr/bin/env bash
# Padded collectives (programs/collectives.hpp, "Padded collectives"): sizes
# the algorithm cannot split run zero-padded, bit-exact against the host
# reference on non-power-of-two rings, with the padded size the report names;
# the padded bytes travel (a padded size takes as long as the size it ran as,
# and no less than the aligned size below it).
# Usage: collective_padded.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# V_pad for size V and split M (bytes per granule of every unit): V itself if
# M divides it, else ceil(V / M) granules rounded up to a multiple of the
# largest power of two <= that / 64.
pad() {
  local v=$1 m=$2
  if ((v % m == 0)); then echo "$v"; return; fi
  local least=$((v / m + 1)) align=1
  while ((align * 2 <= least / 64)); do align=$((align * 2)); done
  echo $(((least + align - 1) / align * align * m))
}

# check NAME M SIZES ARGS...: every size bit-exact with data, its padded_bytes
# pad(size, M), the table naming each padding.
check() {
  local name=$1 m=$2 sizes=$3
  shift 3
  "$tpuemu" collective "$@" --sizes "$sizes" --json "$name.json" > "$name.txt" || fail "$name: exit $?"
  [ "$(jq -r '[.rows[].check] | unique | join(",")' "$name.json")" = bit-exact ] || fail "$name: not bit-exact"
  local expected=() v
  for v in ${sizes//,/ }; do expected+=("$(pad "$v" "$m")"); done
  local want got
  want=$(IFS=,; echo "${expected[*]}")
  got=$(jq -r '[.rows[].padded_bytes | tostring] | join(",")' "$name.json")
  [ "$got" = "$want" ] || fail "$name: padded_bytes $got, expected $want"
  [ "$(jq -r '[.rows[].bytes | tostring] | join(",")' "$name.json")" = "$sizes" ] || fail "$name: bytes"
  for v in ${sizes//,/ }; do
    [ "$(pad "$v" "$m")" = "$v" ] && continue
    grep -q "^# padded: $v B ran as $(pad "$v" "$m") B" "$name.txt" || fail "$name: no padding note for $v"
  done
}
# M = chips x parts x directions x 32 B (multi-axis over 2x3x1: 2 parts, the axes longer than 1).
check ar_v5e_3 192 1000,65540 --op all-reduce --chip v5e --topology 3
check ar_v5e_5_ring_bf16 160 1002,65536 --op all-reduce --chip v5e --topology 5 --algo ring --dtype bf16
check ag_v5e_1x6 384 1000,102400 --op all-gather --chip v5e --topology 1x6
check rs_v5e_1x6 384 1000,102400 --op reduce-scatter --chip v5e --topology 1x6
check ar_v5p_2x3x1_multi 768 4000,1048576 --op all-reduce --chip v5p --topology 2x3x1 --algo multi-axis
check rs_v5p_2x3x1_multi_bf16 768 4002 --op reduce-scatter --chip v5p --topology 2x3x1 --algo multi-axis --dtype bf16
check ag_v5p_2x3x1_ring 192 6000 --op all-gather --chip v5p --topology 2x3x1 --algo ring
check ar_h100_6_one_shot 192 1000 --op all-reduce --chip h100 --topology node:6 --algo one-shot
check ar_h100_6_tree 192 1000 --op all-reduce --chip h100 --topology node:6 --algo tree

# Timing: V runs as V_pad, so it takes V_pad's cycles exactly, and no fewer
# than the largest size below V the algorithm splits unpadded (floor(V / M)
# x M). all-reduce over 5 chips, M = 320: 65540 B -> 205 granules rounded
# to 2 (65920 B), below it 65280 B; all-gather over 1x6, M = 384: 102400 B
# -> 267 granules rounded to 4 (102912 B), below it 102144 B.
timing() {
  local name=$1 lo=$2 v=$3 hi=$4
  shift 4
  "$tpuemu" collective "$@" --sizes "$lo,$v,$hi" --no-data --json "$name.json" > /dev/null || fail "$name: exit $?"
  mapfile -t c < <(jq -r '.rows[].cycles' "$name.json")
  [ "$(jq -r '.rows[1].padded_bytes' "$name.json")" = "$hi" ] || fail "$name: $v did not run as $hi"
  ((c[0] <= c[1])) || fail "$name: $v B took ${c[1]} cycles, fewer than the $lo B below it (${c[0]})"
  ((c[1] == c[2])) || fail "$name: $v B took ${c[1]} cycles, not those of the $hi B it ran as (${c[2]})"
  ((c[0] < c[2])) || fail "$name: $lo B and $hi B take the same cycles (${c[0]}): the padding did not travel"
}
timing ar_v5e_5 65280 65540 65920 --op all-reduce --chip v5e --topology 5
# With one piece size for all three (64 B, dividing the units of 266 and 268
# granules): v5e's 1x6 has no wraparound, its ring is folded
# (programs/collectives.hpp), and with the pieces the generator picks the
# size below, 102144 B (pieces of 38 granules), takes 11081 cycles against
# 10988 for 102400 B (padded to units of 268 granules, pieces of 67): "no
# fewer cycles than the size below" holds where the pieces match.
timing ag_v5e_1x6 102144 102400 102912 --op all-gather --chip v5e --topology 1x6 --piece 64
echo PASS
