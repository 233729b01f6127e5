#!/usr/bin/env bash
# The collective-matmul workload's four variants on a v5e 2x4 mesh, with
# data: every chip's out bit-exact, the blocking variant's all-gather exposed,
# the overlapped-steps variant's shifts hidden behind its chunk matmuls (its
# exposed communication under half the blocking one's), the overlapped
# variant one program per chip whose three shifts of every chip's A chunk are
# the run's ICI traffic and which is faster than the steps, the baseline without
# any communication, and the overlapped variant's timing-only run the same
# cycles.
# Usage: collective_matmul.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
args=(--topology 2x4 --m 512 --k 1024 --n 2048)
for v in blocking overlapped overlapped-steps baseline; do
  "$tpuemu" workload collective-matmul "${args[@]}" --variant $v --json $v.json > $v.txt || fail "$v: exit code $?"
  [ "$(jq -r .ok $v.json)" = true ] || fail "$v: $(jq -r .check $v.json)"
  case "$(jq -r .check $v.json)" in bit-exact*) ;; *) fail "$v: $(jq -r .check $v.json)" ;; esac
  [ "$(jq '.warnings | length' $v.json)" = 0 ] || fail "$v: warnings $(jq -c .warnings $v.json)"
  [ "$(jq -r .variant $v.json)" = $v ] || fail "$v: variant $(jq -r .variant $v.json)"
done
j() { jq -r "$2" "$1.json"; }
[ "$(j blocking '[.phases[] | select(.kind == "communication") | .op] | join(",")')" = all-gather ] ||
  fail "blocking: communication $(j blocking '[.phases[] | select(.kind == "communication") | .op]')"
[ "$(j baseline '.ici_bytes')" = 0 ] || fail "baseline: ICI bytes $(j baseline .ici_bytes)"
[ "$(j baseline '[.phases[] | select(.kind == "communication")] | length')" = 0 ] || fail "baseline communicates"
[ "$(j overlapped-steps '[.phases[] | select(.kind == "compute")] | length')" = 4 ] ||
  fail "overlapped-steps: want 4 chunk matmuls"
[ "$(j overlapped-steps '[.phases[] | select(.op == "ring-shift")] | length')" = 3 ] ||
  fail "overlapped-steps: want 3 shifts"
# overlapped: one step; its ICI bytes are 3 shifts of every chip's 256x256 bf16 chunk.
[ "$(j overlapped '.phases | length')" = 1 ] || fail "overlapped: want one step"
[ "$(j overlapped '.phases[0].chunks')" = 4 ] || fail "overlapped: want 4 chunks"
[ "$(j overlapped .ici_bytes)" = $((3 * 8 * 256 * 256 * 2)) ] || fail "overlapped: ICI bytes $(j overlapped .ici_bytes)"
# The blocking all-gather is exposed; the overlapped-steps shifts mostly are not.
exposed_blocking=$(j blocking .exposed_communication_seconds)
exposed_steps=$(j overlapped-steps .exposed_communication_seconds)
gather=$(j blocking '[.phases[] | select(.kind == "communication") | .seconds] | add')
awk -v e="$exposed_blocking" -v g="$gather" 'BEGIN { exit !(e >= 0.99 * g) }' ||
  fail "blocking: exposed communication $exposed_blocking s is not its all-gather's $gather s"
awk -v o="$exposed_steps" -v b="$exposed_blocking" 'BEGIN { exit !(o < 0.5 * b) }' ||
  fail "overlapped-steps: exposed communication $exposed_steps s is not under half the blocking $exposed_blocking s"
# At this size a shift (4.9 us) outlasts a chunk's matmul: the overlapped program is shift-bound, and still
# faster than the chain of steps. Not than gathering first: Y (4 chips, no wraparound) runs the all-gather
# on the folded bidirectional ring (programs/collectives.hpp), 16.06 us against the overlapped 17.61 us
# (before the fold the gather's closing hops ran back along the line and blocking was the slowest).
for other in overlapped-steps; do
  awk -v o="$(j overlapped .seconds)" -v b="$(j $other .seconds)" 'BEGIN { exit !(o < b) }' ||
    fail "overlapped: $(j overlapped .seconds) s is not under $other's $(j $other .seconds) s"
done
"$tpuemu" workload collective-matmul "${args[@]}" --variant overlapped --no-data --json timing.json > /dev/null
[ "$(jq .cycles timing.json)" = "$(j overlapped .cycles)" ] || fail "overlapped: --no-data cycles differ"
"$tpuemu" workload collective-matmul "${args[@]}" --variant overlapped --no-data --json again.json > /dev/null
[ "$(jq .cycles again.json)" = "$(j overlapped .cycles)" ] || fail "overlapped: cycles differ between runs"
# Two chips on Y (one send each way round the ring), a 2x2 of v5p, with data.
"$tpuemu" workload collective-matmul --chip v5p --topology 2x2 --m 256 --k 1024 --n 1024 --json v5p.json > /dev/null ||
  fail "v5p 2x2: exit code $?"
case "$(jq -r .check v5p.json)" in bit-exact*) ;; *) fail "v5p 2x2: $(jq -r .check v5p.json)" ;; esac
echo PASS
