#!/usr/bin/env bash
# rank_dies.sh TPUEMU [rank|child]: a pod over 2 ranks whose rank 1 is
# killed (SIGKILL) mid-run must end with a non-zero exit code within 30 s,
# never hang. `rank` (default) kills rank 1's MPI process, `child` the child
# process it simulates the collective in (api/child_process.hpp).
set -u
tpuemu=$1
which=${2:-rank}
[[ $which == rank || $which == child ]] || { echo "rank_dies.sh: say rank or child, not '$which'"; exit 2; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# A timing-only all-reduce that runs for several seconds. The mark tells this
# test's ranks from other tests' tpuemu processes running at the same time.
export TPUEMU_RANK_DIES_MARK=$$
# Under mpirun the first size runs in the rank itself, later ones in a child.
sizes=1G
[[ $which == child ]] && sizes=64K,1G
mpirun --allow-run-as-root --oversubscribe -np 2 "$tpuemu" collective --op all-reduce --chip v5e --topology 16x16 \
  --sizes "$sizes" --no-data >"$out" 2>&1 &
launcher=$!
victim=""
for _ in $(seq 100); do  # find rank 1 (its environment says so), up to 10 s
  for pid in $(pgrep -x tpuemu || true); do
    env=$(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null)
    if grep -qx "TPUEMU_RANK_DIES_MARK=$$" <<<"$env" && grep -qx 'OMPI_COMM_WORLD_RANK=1' <<<"$env"; then
      # The child shares its parent's environment; it is the one whose parent is a tpuemu.
      parent=$(awk '/^PPid:/ {print $2}' "/proc/$pid/status" 2>/dev/null)
      parent_name=$(cat "/proc/$parent/comm" 2>/dev/null)
      is_child=rank
      [[ $parent_name == tpuemu ]] && is_child=child
      [[ $is_child == "$which" ]] && victim=$pid
    fi
  done
  [[ -n $victim ]] && break
  sleep 0.1
done
if [[ -z $victim ]]; then
  echo "rank 1 ($which) never started"; cat "$out"; kill "$launcher" 2>/dev/null; exit 1
fi
sleep 1
kill -9 "$victim"
killed_at=$SECONDS
for _ in $(seq 300); do
  kill -0 "$launcher" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$launcher" 2>/dev/null; then
  echo "the other rank still runs 30 s after rank 1 ($which) died"; kill -9 "$launcher"; exit 1
fi
wait "$launcher"
code=$?
echo "mpirun exited with $code $((SECONDS - killed_at)) s after rank 1 ($which) was killed"
[[ $code -ne 0 ]] || { cat "$out"; exit 1; }
# A dead child is named by its rank before every rank is ended.
if [[ $which == child ]] && ! grep -q "rank 1: the emulation died of signal 9" "$out"; then
  echo "no message naming the dead child:"; cat "$out"; exit 1
fi
