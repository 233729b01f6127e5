#!/usr/bin/env bash
# The book's crossover for an mlp strategy, measured: sweep OPTION over
# RANGE (START:END:STEP, timing only), find where the measured compute time
# overtakes the measured communication time (linear between the two sweep
# points that bracket it) and require it within 25 % of the book's threshold
# as the workload reports it (.book.threshold_at[OPTION]).
# Communication is all of it, or with --max (FSDP + TP, the book's own
# criterion: its B/N > (C/W)^2 / (M_X M_Y F) is where compute overtakes the
# LARGER of the two collective sets, the FSDP ones over the data axes and the
# TP ones over the model axes, which the book lets overlap) the larger of the
# two sums, from each point's --json phases.
# With --balance (TP over --d-ff) the reference is where the book's own
# forward-and-backward terms balance, T_math = T_comms (T_math grows with F,
# T_comms does not: F x T_comms / T_math at the sweep's first point), instead
# of the book's threshold, the forward pass's balance (docs/workloads.md,
# "Crossovers").
# Usage: workload_mlp_crossover.sh TPUEMU WORKDIR [--max | --balance] OPTION RANGE -- ARGS...
set -euo pipefail
tpuemu=$1 work=$2
shift 2
max=0 balance=0
[ "$1" = --max ] && max=1 && shift
[ "$1" = --balance ] && balance=1 && shift
option=$1 range=$2
shift 2
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
if [ "$max" = 0 ]; then
  "$tpuemu" workload mlp "$@" --no-data --sweep "$option=$range" --csv sweep.csv || fail "sweep exit code $?"
  first=$(sed -n 2p sweep.csv | cut -d, -f2)
  "$tpuemu" workload mlp "$@" --"$option" "$first" --no-data --json book.json > /dev/null || fail "run exit code $?"
  # Rows "value compute communication".
  rows=$(awk -F, 'NR > 1 { print $2, $4, $5 }' sweep.csv)
  cat sweep.csv
else
  IFS=: read -r start end step <<< "$range"
  rows=""
  for ((v = start; v <= end; v += step)); do
    "$tpuemu" workload mlp "$@" --"$option" "$v" --no-data --json "r$v.json" > /dev/null || fail "--$option $v: exit code $?"
    # A phase's axes as a sorted string, so "YX" and "XY" compare equal.
    rows+="$(jq -r --arg v "$v" '
      def sorted: split("") | sort | join("");
      (.data_axes | sorted) as $x | (.model_axes | sorted) as $y |
      [.phases[] | select(.kind == "communication")] as $c |
      ([$c[] | select((.axes | sorted) == $x) | .seconds] | add // 0) as $cx |
      ([$c[] | select((.axes | sorted) == $y) | .seconds] | add // 0) as $cy |
      "\($v) \(.compute_seconds) \([$cx, $cy] | max) \($cx) \($cy) \(.communication_seconds)"' "r$v.json")"$'\n'
  done
  cp "r$start.json" book.json
  echo "$option compute_s larger_set_s data_axes_comms_s model_axes_comms_s all_comms_s"
  printf '%s' "$rows"
fi
book=$(jq -r --arg o "$option" '.book.threshold_at[$o]' book.json)
[ "$book" != null ] || fail "the report has no threshold for --$option"
threshold_name=$(jq -r .book.threshold_name book.json)
if [ "$balance" = 1 ]; then
  [ "$option" = d-ff ] || fail "--balance is for a sweep over --d-ff"
  first=$(sed -n 2p sweep.csv | cut -d, -f2)
  book=$(jq -r --arg f "$first" '($f | tonumber) * .book.t_comms_seconds / .book.t_math_seconds' book.json)
  threshold_name="F where the book's T_math = T_comms, forward and backward"
fi
measured=$(awk 'NF { d = $2 - $3; if (n++ > 0 && pd < 0 && d >= 0) { print px + ($1 - px) * (-pd) / (d - pd); found = 1; exit }
                     px = $1; pd = d }
                END { if (!found) print "none" }' <<< "$rows")
[ "$measured" != none ] || fail "compute never overtakes communication over --$option $range"
echo "measured crossover --$option $measured$([ "$max" = 1 ] && echo " (compute against the larger collective set)"), the book's $book ($threshold_name)"
awk -v m="$measured" -v b="$book" 'BEGIN { r = m / b; printf "measured / book = %.3f\n", r; exit !(r >= 0.75 && r <= 1.25) }' ||
  fail "the crossover is more than 25 % from the book's"
echo PASS
