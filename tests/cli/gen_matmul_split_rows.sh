#!/usr/bin/env bash
# A column block of a half or a quarter of the MXUs splits its rows over all
# of them (programs/generators.cpp, MatmulGen::split_rows): MXU j w + m
# multiplies row pair t + j G2/parts of tile m. Bit-exact against the
# reference on v5e (N = 256: one block of 2 tiles; N = 1280: two of 4 and a
# tail of 2; N = 128 and 640: a block / tail of 1 tile in quarters; bf16 and
# f32 inputs and C; K = 200, a masked last k-block), on v4p, and on v5p split
# over both cores by rows (N = 768: 6 tiles per core, 4 + 2); the 2-tile
# program drives all 4 MXUs, and N = 256 takes under 0.8 of N = 512's cycles
# (both ran on 4 MXU's worth of time before: 0.90).
# Usage: gen_matmul_split_rows.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
for shape in "v5e 256 384 256 f32 bf16 -" "v5e 512 200 256 bf16 bf16 -" "v5e 256 256 1280 f32 bf16 -" \
  "v5e 256 384 256 f32 f32 -" "v5e 256 200 128 bf16 f32 -" "v5e 512 256 640 f32 bf16 -" "v5e 256 384 128 f32 f32 -" \
  "v4p 512 300 256 bf16 bf16 -" "v5p 1024 384 768 f32 bf16 --split-cores" "v5p 512 256 256 bf16 f32 --split-cores"; do
  read -r chip m k n od dt split <<< "$shape"
  [ "$split" = - ] && split=""
  topo=()
  [ -n "$split" ] && topo=(--topology 1)
  "$tpuemu" gen matmul --chip "$chip" --m "$m" --k "$k" --n "$n" --out-dtype "$od" --dtype "$dt" --inputs in $split -o s.llo
  grep -q "vld \[vmem:\[%s6 + " s.llo || fail "$shape: no second half's row pair"
  "$tpuemu" run s.llo --chip "$chip" "${topo[@]}" --in 0=in.a.npy --in 1=in.b.npy --expect 2=in.expected.npy |
    grep -q "bit-exact" || fail "$shape: not bit-exact"
  echo "$shape: bit-exact"
done
"$tpuemu" gen matmul --m 2048 --k 768 --n 256 --out-dtype bf16 -o two.llo
"$tpuemu" gen matmul --m 2048 --k 768 --n 512 --out-dtype bf16 -o four.llo
for m in 0 1 2 3; do grep -q "vmatmul.*mxu$m " two.llo || fail "N = 256: MXU $m never multiplies"; done
c2=$("$tpuemu" run two.llo --no-data | sed -n 's/^cycles *\([0-9]*\) .*/\1/p')
c4=$("$tpuemu" run four.llo --no-data | sed -n 's/^cycles *\([0-9]*\) .*/\1/p')
echo "2048x768 bf16 C: N = 256 $c2 cycles, N = 512 $c4"
awk -v a="$c2" -v b="$c4" 'BEGIN { exit !(a < 0.8 * b) }' || fail "N = 256 takes $c2 cycles, not under 0.8 x $c4"
echo PASS
