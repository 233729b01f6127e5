#!/usr/bin/env bash
# The collective-matmul workload's three variants on a v5e 2x4 mesh, with
# data: every chip's out bit-exact, the blocking variant's all-gather exposed,
# the overlapped variant's shifts hidden behind its chunk matmuls (its exposed
# communication under half the blocking one's), the baseline without any
# communication, and the overlapped variant's timing-only run the same cycles.
# Usage: collective_matmul.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
args=(--topology 2x4 --m 512 --k 1024 --n 2048)
for v in blocking overlapped baseline; do
  "$tpuemu" workload collective-matmul "${args[@]}" --variant $v --json $v.json > $v.txt || fail "$v: exit code $?"
  [ "$(jq -r .ok $v.json)" = true ] || fail "$v: $(jq -r .check $v.json)"
  case "$(jq -r .check $v.json)" in bit-exact*) ;; *) fail "$v: $(jq -r .check $v.json)" ;; esac
  [ "$(jq '.warnings | length' $v.json)" = 0 ] || fail "$v: warnings $(jq -c .warnings $v.json)"
done
j() { jq -r "$2" "$1.json"; }
[ "$(j blocking '[.phases[] | select(.kind == "communication") | .op] | join(",")')" = all-gather ] ||
  fail "blocking: communication $(j blocking '[.phases[] | select(.kind == "communication") | .op]')"
[ "$(j baseline '.ici_bytes')" = 0 ] || fail "baseline: ICI bytes $(j baseline .ici_bytes)"
[ "$(j baseline '[.phases[] | select(.kind == "communication")] | length')" = 0 ] || fail "baseline communicates"
[ "$(j overlapped '[.phases[] | select(.kind == "compute")] | length')" = 4 ] || fail "overlapped: want 4 chunk matmuls"
[ "$(j overlapped '[.phases[] | select(.op == "ring-shift")] | length')" = 3 ] || fail "overlapped: want 3 shifts"
# The blocking all-gather is exposed; the overlapped shifts mostly are not.
exposed_blocking=$(j blocking .exposed_communication_seconds)
exposed_overlapped=$(j overlapped .exposed_communication_seconds)
gather=$(j blocking '[.phases[] | select(.kind == "communication") | .seconds] | add')
awk -v e="$exposed_blocking" -v g="$gather" 'BEGIN { exit !(e >= 0.99 * g) }' ||
  fail "blocking: exposed communication $exposed_blocking s is not its all-gather's $gather s"
awk -v o="$exposed_overlapped" -v b="$exposed_blocking" 'BEGIN { exit !(o < 0.5 * b) }' ||
  fail "overlapped: exposed communication $exposed_overlapped s is not under half the blocking $exposed_blocking s"
"$tpuemu" workload collective-matmul "${args[@]}" --variant overlapped --no-data --json timing.json > /dev/null
[ "$(jq .cycles timing.json)" = "$(j overlapped .cycles)" ] || fail "overlapped: --no-data cycles differ"
echo PASS
