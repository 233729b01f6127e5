#!/usr/bin/env bash
# compare_ranks.sh RANKS FILE_OPTION -- TPUEMU ARGS...
# Runs `TPUEMU ARGS...` in one process, then under
# `mpirun -np N TPUEMU ARGS... $TPUEMU_MPI_ARGS` for every N in RANKS
# (comma-separated), and requires every run to give the same exit code, the
# same standard output and the same tpuemu messages on standard error
# (host-cost lines removed: wall time and memory differ), and the same JSON
# file written by FILE_OPTION (e.g. --json; host* fields removed; "-" = none;
# --vcd, --csv, --plot and --graph: the file byte for byte).
# With TPUEMU_COMPARE_REQUIRE=REGEX every run's standard output must also
# match REGEX (e.g. a passed check) and FILE_OPTION's file must exist.
# One pod over N ranks must be the one-process run (issue 13).
set -u
ranks=$1 file_option=$2
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mpirun_cmd=(mpirun --allow-run-as-root --oversubscribe)
ext=json
case $file_option in
  --vcd) ext='vcd' ;;
  --csv) ext='csv' ;;
  --plot) ext='svg' ;;
  --graph) ext='dot' ;;
esac

# Python: Debian's interpreter where there is one (a `python3` earlier on
# PATH may be a pyenv shim, ~0.4 s of CPU in bash start-ups per call).
python=/usr/bin/python3; [[ -x $python ]] || python=python3
strip_json() {
  "$python" - "$1" <<'PY'
import json, sys
def strip(o):
    if isinstance(o, dict):
        return {k: strip(v) for k, v in o.items() if not k.startswith("host")}
    if isinstance(o, list):
        return [strip(x) for x in o]
    return o
print(json.dumps(strip(json.load(open(sys.argv[1]))), indent=1, sort_keys=True))
PY
}

# run NAME COMMAND...: exit code, filtered stdout, tpuemu's stderr lines, stripped JSON.
run() {
  local name=$1
  shift
  local file_args=()
  [[ $file_option != - ]] && file_args=("$file_option" "$work/$name.$ext")
  "$@" "${file_args[@]}" >"$work/$name.out" 2>"$work/$name.err"
  echo $? >"$work/$name.code"
  grep -Ev '^(# )?host[: ]' "$work/$name.out" >"$work/$name.stdout" || true
  grep -E '^(tpuemu|  chip)' "$work/$name.err" >"$work/$name.stderr" || true
  if [[ $file_option != - ]]; then
    if [[ ! -s $work/$name.$ext ]]; then
      echo "(no file)" >"$work/$name.file"
    elif [[ $ext != json ]]; then
      cp "$work/$name.$ext" "$work/$name.file"
    else
      strip_json "$work/$name.json" >"$work/$name.file"
    fi
  fi
}

# require NAME: the run's output matches TPUEMU_COMPARE_REQUIRE and its file exists.
require() {
  [[ -z ${TPUEMU_COMPARE_REQUIRE:-} ]] && return 0
  if ! grep -Eq "$TPUEMU_COMPARE_REQUIRE" "$work/$1.stdout"; then
    echo "$1: standard output does not match '$TPUEMU_COMPARE_REQUIRE':"
    head -20 "$work/$1.out" "$work/$1.err"
    return 1
  fi
  if [[ $file_option != - && ! -s $work/$1.$ext ]]; then
    echo "$1: wrote no $file_option file"
    return 1
  fi
}

run one "$@"
echo "one process: exit $(cat "$work/one.code")"
status=0
require one || status=1
IFS=, read -ra counts <<<"$ranks"
for n in "${counts[@]}"; do
  # shellcheck disable=SC2086
  run "np$n" "${mpirun_cmd[@]}" -np "$n" "$@" ${TPUEMU_MPI_ARGS:-}
  require "np$n" || status=1
  for part in code stdout stderr file; do
    [[ $part == file && $file_option == - ]] && continue
    if ! diff -u "$work/one.$part" "$work/np$n.$part" >"$work/diff"; then
      echo "$n ranks: $part differs from one process:"
      head -40 "$work/diff"
      [[ $part == code ]] && { echo "--- stderr of the $n-rank run ---"; head -30 "$work/np$n.err"; }
      status=1
    fi
  done
  [[ $status == 0 ]] && echo "$n ranks: identical"
done
exit $status
