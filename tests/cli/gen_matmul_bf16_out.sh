#!/usr/bin/env bash
# gen matmul --out-dtype bf16 (programs::MatmulSpec::out_dtype): C rounded to
# bf16 (nearest even) from the f32 sums as it is stored. Bit-exact against
# the rounded reference on v5e (one column block of 4 MXUs and a tail of 1;
# M = 48: three row pairs) and on v5p split over both cores by columns and
# by rows; the f32 reference does not match it (the check can fail); it
# moves fewer C bytes than the f32 program; bad shapes exit 2.
# Usage: gen_matmul_bf16_out.sh TPUEMU WORKDIR
set -euo pipefail
tpuemu=$1 work=$2
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
for shape in "v5e 256 384 640 -" "v5e 48 256 512 -" "v5p 256 512 1024 --split-cores" "v5p 512 256 384 --split-cores"; do
  read -r chip m k n split <<< "$shape"
  [ "$split" = - ] && split=""
  topo=()
  [ -n "$split" ] && topo=(--topology 1)
  "$tpuemu" gen matmul --chip "$chip" --m "$m" --k "$k" --n "$n" --out-dtype bf16 --inputs b $split -o b.llo
  "$tpuemu" run b.llo --chip "$chip" "${topo[@]}" --in 0=b.a.npy --in 1=b.b.npy --expect 2=b.expected.npy \
    --report rb.json | grep -q "bit-exact" || fail "$shape: not bit-exact"
  "$tpuemu" gen matmul --chip "$chip" --m "$m" --k "$k" --n "$n" --inputs f $split -o f.llo
  "$tpuemu" run f.llo --chip "$chip" "${topo[@]}" --in 0=f.a.npy --in 1=f.b.npy --expect 2=f.expected.npy \
    --report rf.json | grep -q "bit-exact" || fail "$shape f32: not bit-exact"
  set +e
  "$tpuemu" run b.llo --chip "$chip" "${topo[@]}" --in 0=b.a.npy --in 1=b.b.npy --expect 2=f.expected.npy > wrong.txt
  rc=$?
  set -e
  [ "$rc" = 1 ] && grep -q "elements differ" wrong.txt || fail "$shape: the f32 reference matched the bf16 C (exit $rc)"
  bf=$(jq '[.per_chip[0].cores[].dma_bytes] | add' rb.json) f32=$(jq '[.per_chip[0].cores[].dma_bytes] | add' rf.json)
  echo "$shape: DMA bytes bf16 C $bf, f32 C $f32"
  [ $((f32 - bf)) = $((m * n * 2)) ] || fail "$shape: the bf16 C saves $((f32 - bf)) DMA bytes, not M x N x 2"
done
for bad in "--m 40 --k 128 --n 128 --out-dtype bf16:M a multiple of 16" \
  "--chip edu --m 16 --k 8 --n 8 --out-dtype bf16:needs 128x128 MXUs" "--m 16 --k 128 --n 128 --out-dtype f16:must be bf16 or f32"; do
  args=${bad%%:*} want=${bad#*:}
  set +e
  # shellcheck disable=SC2086
  out=$("$tpuemu" gen matmul $args 2>&1 >/dev/null)
  rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q "$want" <<< "$out" || fail "gen matmul $args: exit $rc: $out"
done
echo PASS
