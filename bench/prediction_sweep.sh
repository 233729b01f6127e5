#!/usr/bin/env bash
# How well the collective predictions (programs/collectives.cpp) track the emulated times: runs the
# ring family (ring, bidir-ring, multi-axis) all-reduce and reduce-scatter on ten tori at 64 KiB ..
# 64 MiB (360 runs, --no-data, about 11 s on the 2-core VM of 2026-12-06), writes one line per run
# (chip topology axes op algorithm size measured_us predicted_us) and prints, per op, the geometric
# mean of |ln(measured / predicted)| and how many runs fall within 10 % and 15 %, then every run
# outside 15 %. Usage: bench/prediction_sweep.sh [BUILD_DIR] [OUT]   (default build, /tmp/prediction_sweep.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-${TMPDIR:-/tmp}/prediction_sweep.txt}
json=$(mktemp)
trap 'rm -f "$json"' EXIT
: >"$out"
for cfg in "v5e 4x4 x,y" "v5e 16 x" "v5e 8x16 x,y" "v5p 4x4x4 x,y,z" "v5p 4x4x4 z" "v5p 2x2x2 x,y,z" "v6e 4x4 x,y" \
  "v2 4x2 y" "v5e 2x2 x,y" "v5p 1x16x1 y"; do
  read -r chip topology axes <<<"$cfg"
  for op in all-reduce reduce-scatter; do
    "$build/bin/tpuemu" collective --op "$op" --chip "$chip" --topology "$topology" --axes "$axes" --force \
      --sizes 64K,256K,1M,4M,16M,64M --algo ring,bidir-ring,multi-axis --no-data --json "$json" >/dev/null
    jq -r --arg c "$chip $topology $axes $op" \
      '.rows[] | "\($c) \(.algorithm) \(.size) \(.time_us) \(.predicted_seconds * 1e6)"' "$json" >>"$out"
  done
done
python3 - "$out" <<'PY'
import math, sys
rows = [line.split() for line in open(sys.argv[1])]
ratio = lambda r: float(r[6]) / float(r[7])
for name, keep in (("all", lambda r: True), ("all-reduce", lambda r: r[3] == "all-reduce"),
                   ("reduce-scatter", lambda r: r[3] == "reduce-scatter")):
    rs = [ratio(r) for r in rows if keep(r)]
    geo = math.exp(sum(abs(math.log(x)) for x in rs) / len(rs))
    print(f"{name}: {len(rs)} runs, geometric mean |measured/predicted - 1| {100 * (geo - 1):.1f} %, "
          f"within 10 % {sum(0.9 <= x <= 1.1 for x in rs)}, within 15 % {sum(0.85 <= x <= 1.15 for x in rs)}")
for r in rows:
    if not 0.85 <= ratio(r) <= 1.15:
        print(" ".join(r[:6]), f"{float(r[6]):.2f} / {float(r[7]):.2f} us = {ratio(r):.2f}")
PY
