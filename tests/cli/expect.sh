#!/usr/bin/env bash
# expect.sh CODE REGEX -- COMMAND...
# Runs COMMAND, requires exit code CODE and that stdout+stderr match the
# (multi-line, extended) REGEX. Prints the output on failure.
# With EXPECT_STDOUT_EMPTY=1, also requires that nothing went to stdout (the
# message belongs on stderr; stdout stays machine-readable).
set -u
code=$1 regex=$2
shift 3
stdout_file=$(mktemp)
trap 'rm -f "$stdout_file"' EXIT
if [[ "${EXPECT_STDOUT_EMPTY:-0}" == 1 ]]; then
  out=$("$@" 2>&1 >"$stdout_file")
  rc=$?
  out+=$(cat "$stdout_file")
else
  out=$("$@" 2>&1)
  rc=$?
fi
if [[ $rc -ne $code ]]; then
  printf 'expected exit code %s, got %s\n--- output ---\n%s\n' "$code" "$rc" "$out"
  exit 1
fi
if ! printf '%s' "$out" | grep -Pzq -- "(?s)$regex"; then
  printf 'output does not match /%s/\n--- output ---\n%s\n' "$regex" "$out"
  exit 1
fi
if [[ "${EXPECT_STDOUT_EMPTY:-0}" == 1 && -s "$stdout_file" ]]; then
  printf 'expected nothing on stdout, got:\n%s\n' "$(cat "$stdout_file")"
  exit 1
fi
exit 0
