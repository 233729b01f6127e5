#!/usr/bin/env bash
# --expect naming the file --out writes (by name, and by another name for the
# same file): the comparison is against the file as it was before the run,
# so a wrong expected file still fails (exit 1), and a right one passes.
# Usage: run_expect_is_out.sh TPUEMU SOURCE_DIR
set -euo pipefail
tpuemu=$1
src=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
run=(run "$src/programs/matmul_8x128.llo" --in 0="$src/tests/data/run/x_8x128.npy" --in 1="$src/tests/data/run/w_128x128.npy")
cp "$src/tests/data/run/x_8x128.npy" "$dir/c.npy"  # not the product
set +e
"$tpuemu" "${run[@]}" --out 2="$dir/c.npy" --expect 2="$dir/c.npy" > "$dir/same_name.txt"
code=$?
set -e
[[ $code == 1 ]] || { echo "expected exit 1 for a wrong --expect that --out rewrites, got $code"; cat "$dir/same_name.txt"; exit 1; }
grep -q "1019 of 1024 elements differ" "$dir/same_name.txt" || { cat "$dir/same_name.txt"; exit 1; }
# Now c.npy holds the product: the same file by another name passes, and a wrong one by another name fails.
ln -s "$dir/c.npy" "$dir/link.npy"
"$tpuemu" "${run[@]}" --out 2="$dir/c.npy" --expect 2="$dir/link.npy" | grep -q "bit-exact" || { echo "right file by another name"; exit 1; }
cp "$src/tests/data/run/x_8x128.npy" "$dir/c.npy"
set +e
"$tpuemu" "${run[@]}" --out 2="$dir/c.npy" --expect 2="$dir/link.npy" > "$dir/link.txt"
code=$?
set -e
[[ $code == 1 ]] || { echo "expected exit 1 for a wrong --expect by another name, got $code"; cat "$dir/link.txt"; exit 1; }
echo "pass"
