#!/usr/bin/env bash
# The book's crossover for an mlp strategy, measured: sweep OPTION over
# VALUES (timing only), find where the measured compute time overtakes the
# measured communication time (linear between the two sweep points that
# bracket it) and require it within 25 % of the book's threshold as the
# workload reports it (.book.threshold_at[OPTION]).
# Usage: workload_mlp_crossover.sh TPUEMU WORKDIR OPTION RANGE -- ARGS...
set -euo pipefail
tpuemu=$1 work=$2 option=$3 range=$4
shift 4
[ "$1" = "--" ] && shift
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" workload mlp "$@" --no-data --sweep "$option=$range" --csv sweep.csv || fail "sweep exit code $?"
first=$(sed -n 2p sweep.csv | cut -d, -f2)
"$tpuemu" workload mlp "$@" --"$option" "$first" --no-data --json book.json > /dev/null || fail "run exit code $?"
book=$(jq -r --arg o "$option" '.book.threshold_at[$o]' book.json)
[ "$book" != null ] || fail "the report has no threshold for --$option"
measured=$(awk -F, 'NR > 1 { d = $4 - $5; if (NR > 2 && pd < 0 && d >= 0) { print px + (x2 = $2 - px) * (-pd) / (d - pd); found = 1; exit }
                             px = $2; pd = d }
                    END { if (!found) print "none" }' sweep.csv)
cat sweep.csv
[ "$measured" != none ] || fail "compute never overtakes communication over --$option $range"
echo "measured crossover --$option $measured, the book's $book ($(jq -r .book.threshold_name book.json))"
awk -v m="$measured" -v b="$book" 'BEGIN { r = m / b; printf "measured / book = %.3f\n", r; exit !(r >= 0.75 && r <= 1.25) }' ||
  fail "the crossover is more than 25 % from the book's"
echo PASS
