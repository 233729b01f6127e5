#!/usr/bin/env bash
# The book's FSDP + TP crossover by the book's own criterion (WORKLOADS.md:
# B/N > (C/W)^2 / (M_X M_Y F) is where compute overtakes the LARGER of the
# two collective sets, the TP ones over the model axes and the FSDP ones over
# the data axes, which the book lets overlap each other): run the workload at
# each value of OPTION in RANGE (timing only, --json), take compute against
# max(sum of the data-axes collectives, sum of the model-axes collectives),
# find where compute overtakes it (linear between the two bracketing points)
# and require it within 25 % of the report's .book.threshold_at[OPTION].
# Usage: workload_mlp_crossover_max.sh TPUEMU WORKDIR OPTION START:END:STEP -- ARGS...
set -euo pipefail
tpuemu=$1 work=$2 option=$3 range=$4
shift 4
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
IFS=: read -r start end step <<< "$range"
rows=()
for ((v = start; v <= end; v += step)); do
  "$tpuemu" workload mlp "$@" --"$option" "$v" --no-data --json "r$v.json" > /dev/null || fail "--$option $v: exit code $?"
  # A phase's axes as a sorted string, so "YX" and "XY" compare equal.
  rows+=("$(jq -r --arg v "$v" '
    def sorted: split("") | sort | join("");
    (.data_axes | sorted) as $x | (.model_axes | sorted) as $y |
    [.phases[] | select(.kind == "communication")] as $c |
    ([$c[] | select((.axes | sorted) == $x) | .seconds] | add // 0) as $cx |
    ([$c[] | select((.axes | sorted) == $y) | .seconds] | add // 0) as $cy |
    "\($v) \(.compute_seconds) \($cx) \($cy) \(.communication_seconds)"' "r$v.json")")
done
echo "$option compute_s data_axes_comms_s model_axes_comms_s all_comms_s"
printf '%s\n' "${rows[@]}"
book=$(jq -r --arg o "$option" '.book.threshold_at[$o]' "r$start.json")
[ "$book" != null ] || fail "the report has no threshold for --$option"
measured=$(printf '%s\n' "${rows[@]}" | awk '{ m = ($3 > $4 ? $3 : $4); d = $2 - m
    if (NR > 1 && pd < 0 && d >= 0) { print px + ($1 - px) * (-pd) / (d - pd); found = 1; exit }
    px = $1; pd = d }
  END { if (!found) print "none" }')
[ "$measured" != none ] || fail "compute never overtakes the larger collective set over --$option $range"
echo "measured crossover --$option $measured (compute against the larger collective set), the book's $book ($(jq -r .book.threshold_name "r$start.json"))"
awk -v m="$measured" -v b="$book" 'BEGIN { r = m / b; printf "measured / book = %.3f\n", r; exit !(r >= 0.75 && r <= 1.25) }' ||
  fail "the crossover is more than 25 % from the book's"
echo PASS
