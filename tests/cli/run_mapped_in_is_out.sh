#!/usr/bin/env bash
# An --in file large enough to be mapped (common/npy_file.hpp) that --out
# rewrites: the run reads the input as it was and writes the output over it,
# bit-exact against a run from a copy (the mapping is gone before the write).
# Usage: run_mapped_in_is_out.sh TPUEMU
set -euo pipefail
tpuemu=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# 512x512 f32 operands: 1 MiB each, at the mapping threshold.
"$tpuemu" gen matmul --m 512 --k 512 --n 512 --dtype f32 --inputs "$dir/mm" -o "$dir/mm.llo" > /dev/null
cp "$dir/mm.a.npy" "$dir/a_copy.npy"
"$tpuemu" run "$dir/mm.llo" --in 0="$dir/a_copy.npy" --in 1="$dir/mm.b.npy" --out 2="$dir/c_ref.npy" \
  --expect 2="$dir/mm.expected.npy" | grep -q "bit-exact" || { echo "reference run not bit-exact"; exit 1; }
"$tpuemu" run "$dir/mm.llo" --in 0="$dir/mm.a.npy" --in 1="$dir/mm.b.npy" --out 2="$dir/mm.a.npy" \
  --expect 2="$dir/mm.expected.npy" | grep -q "bit-exact" || { echo "run over its own input not bit-exact"; exit 1; }
cmp "$dir/mm.a.npy" "$dir/c_ref.npy" || { echo "the rewritten input differs from the reference output"; exit 1; }
echo "pass"
