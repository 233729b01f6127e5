#!/usr/bin/env bash
# gen matmul --row-blocks R (programs::MatmulSpec::row_blocks): C computed in
# R blocks of M / R rows, each block's C stored while the next computes.
# Bit-exact against the reference for R = 2 and 4 with an f32 and a bf16 C on
# v5e (one column block of 4 MXUs, and of 1), on v5p split over both cores
# by rows and by columns, and with a partial last k-block; the program moves
# B once per row block (DMA bytes: (R - 1) x K x N x 2 more than R = 1 per core that
# reads all of B, K in whole row tiles of 8); a
# one-column-block matmul whose C store was exposed gets faster. (Shapes and
# options it cannot take: tests/bad_inputs.cmake, bad.gen_matmul_row_blocks_*.)
# Usage: gen_matmul_row_blocks.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
bytes() { jq '[.per_chip[0].cores[].dma_bytes] | add' "$1"; }
for shape in "v5e 256 384 512 f32 -" "v5e 256 300 512 bf16 -" "v5e 128 256 128 f32 -" \
  "v5p 512 256 512 bf16 --split-cores" "v5p 256 384 1024 f32 --split-cores"; do
  read -r chip m k n od split <<< "$shape"
  [ "$split" = - ] && split=""
  topo=()
  [ -n "$split" ] && topo=(--topology 1)
  for r in 1 2 4; do
    "$tpuemu" gen matmul --chip "$chip" --m "$m" --k "$k" --n "$n" --out-dtype "$od" --row-blocks "$r" --inputs in \
      $split -o r$r.llo
    "$tpuemu" run r$r.llo --chip "$chip" "${topo[@]}" --in 0=in.a.npy --in 1=in.b.npy --expect 2=in.expected.npy \
      --report r$r.json | grep -q "bit-exact" || fail "$shape R=$r: not bit-exact"
  done
  grep -q "row blocks 0..3" r4.llo || fail "$shape: R=4 made no row blocks"
  b1=$(bytes r1.json) b4=$(bytes r4.json)
  echo "$shape: DMA bytes R=1 $b1, R=4 $b4"
  kpad=$(((k + 7) / 8 * 8))  # B's rows as the k-blocks' row tiles of 8 move them
  readers=1                  # cores that read all of B: both when split by rows
  grep -q "core c computes rows" r4.llo && readers=2
  [ $((b4 - b1)) = $((3 * kpad * n * 2 * readers)) ] ||
    fail "$shape: R=4 moved $((b4 - b1)) more bytes, not 3 x K x N x 2 x $readers"
done
# v5e 2048x768x512, bf16 C: one column block, C's store was all exposed at the end.
"$tpuemu" gen matmul --m 2048 --k 768 --n 512 --out-dtype bf16 --row-blocks 1 -o one.llo
"$tpuemu" gen matmul --m 2048 --k 768 --n 512 --out-dtype bf16 --row-blocks 2 -o two.llo
c1=$("$tpuemu" run one.llo --no-data | sed -n 's/^cycles *\([0-9]*\) .*/\1/p')
c2=$("$tpuemu" run two.llo --no-data | sed -n 's/^cycles *\([0-9]*\) .*/\1/p')
echo "2048x768x512 bf16 C: R=1 $c1 cycles, R=2 $c2"
[ "$c2" -lt "$c1" ] || fail "2 row blocks ($c2 cycles) not faster than 1 ($c1)"
echo PASS
