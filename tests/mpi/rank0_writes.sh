#!/usr/bin/env bash
# rank0_writes.sh TPUEMU: under mpirun only rank 0 writes a workload's files.
# Each rank is given its own file names (by OMPI_COMM_WORLD_RANK): rank 0's
# --json and --graph must exist, rank 1's must not, and rank 0's JSON must
# report the check passed on 2 ranks.
set -u
tpuemu=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Python: Debian's interpreter where there is one (a `python3` earlier on
# PATH may be a pyenv shim, ~0.4 s of CPU in bash start-ups per call).
python=/usr/bin/python3; [[ -x $python ]] || python=python3
mpirun --allow-run-as-root --oversubscribe -np 2 sh -c "\"$tpuemu\" workload sharded-matmul --chip v5e --topology 2x2 \
  --m 256 --k 256 --n 256 --lhs I_Y,J --rhs J_X,K --json \"$work/r\$OMPI_COMM_WORLD_RANK.json\" \
  --graph \"$work/r\$OMPI_COMM_WORLD_RANK.dot\"" >"$work/out" 2>&1 || { echo "FAIL: exit $?"; cat "$work/out"; exit 1; }
for f in r0.json r0.dot; do [[ -s $work/$f ]] || { echo "FAIL: rank 0 wrote no $f"; exit 1; }; done
for f in r1.json r1.dot; do [[ -e $work/$f ]] && { echo "FAIL: rank 1 wrote $f"; exit 1; }; done
"$python" - "$work/r0.json" <<'PY' || exit 1
import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] and r["check"].startswith("bit-exact"), r["check"]
assert r["host"]["ranks"] == 2 and r["host"]["windows"] > 0, r["host"]
PY
grep -q "check     PASS: bit-exact" "$work/out" || { echo "FAIL: no passed check in the output"; cat "$work/out"; exit 1; }
echo PASS
