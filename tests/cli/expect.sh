#!/usr/bin/env bash
# expect.sh CODE REGEX -- COMMAND...
# Runs COMMAND, requires exit code CODE and that stdout+stderr match the
# (multi-line, extended) REGEX. Prints the output on failure.
set -u
code=$1 regex=$2
shift 3
out=$("$@" 2>&1)
rc=$?
if [[ $rc -ne $code ]]; then
  printf 'expected exit code %s, got %s\n--- output ---\n%s\n' "$code" "$rc" "$out"
  exit 1
fi
if ! printf '%s' "$out" | grep -Pzq -- "(?s)$regex"; then
  printf 'output does not match /%s/\n--- output ---\n%s\n' "$regex" "$out"
  exit 1
fi
exit 0
