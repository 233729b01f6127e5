#!/usr/bin/env bash
# --graph on run, run-case-like chains and workload: the DOT text of a small
# generated program (gen add) holds one cluster per bundle, its DMAs' edges to
# their waits, register edges and a critical path; the node cap cuts a large
# program with a message; a workload's graph holds its steps in a red chain
# with the buffers between them; .svg is rendered by Graphviz's dot (skipped,
# and said so, when dot is absent) and refused with exit 2 without it.
# Usage: graph.sh TPUEMU WORKDIR TESTDATA
set -euo pipefail
tpuemu=$1 work=$2 data=$3
mkdir -p "$work" && cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
"$tpuemu" gen add --n 2048 --chunk 4096 > add.llo
"$tpuemu" run add.llo --no-data --graph add.dot > /dev/null || fail "run --graph add.dot: exit code $?"
grep -q '^digraph program {' add.dot || fail "no digraph"
grep -q 'subgraph cluster_p0b0 {' add.dot || fail "no cluster for bundle 0"
grep -q 'label="%s0 = inlined_call_operand.hbm' add.dot || fail "no node for the operand binding"
# Each input DMA (flag #6+0 / #6+1: allocation 6 holds the add's flags) goes to the wait on its flag.
grep -Eq '^  p0n[0-9]+ -> p0n[0-9]+ \[label="flag #6\+0", fontsize=8, color=darkgreen, style=bold' add.dot ||
  fail "no DMA edge to the wait on flag 0"
grep -Eq '^  p0n[0-9]+ -> p0n[0-9]+ \[label="s10", fontsize=8, color=black' add.dot || fail "no register edge on s10"
grep -Eq 'color=red, penwidth=2\];$' add.dot || fail "no critical path"
nodes=$(grep -Ec '^    p0n[0-9]+ \[label=' add.dot)
ops=$(grep '^{' add.llo | sed -E 's/\}( *\/\/.*)?$//' | awk -F';;' '/[^{ ]/ { n += NF } END { print n }')  # empty bundles hold none
[ "$nodes" = "$ops" ] || fail "$nodes nodes for $ops ops"

# The cap: an add in 256 chunks is straight-line code of more ops than the graph draws.
"$tpuemu" gen add --n 262144 --chunk 4096 > big.llo
"$tpuemu" run big.llo --no-data --graph big.dot > /dev/null 2> big.err || fail "run --graph big.dot: exit code $?"
grep -q '^graph: at most 2000 nodes: big.llo: drawing the first' big.err || fail "no cap message: $(cat big.err)"
[ "$(grep -Ec '^    p0n[0-9]+ \[label=' big.dot)" -le 2000 ] || fail "more than 2000 nodes"

# run-case: the kernel's cluster, named after it; its critical path (by latency, DMAs by their
# transfer) is drawn and its length reported.
"$tpuemu" run-case "$data/case_scalar_input" --graph case.dot > /dev/null || fail "run-case --graph: exit code $?"
grep -Eq '^  label="scale_add: 21 ops in 10 bundles; critical path \(red\): [0-9]+ cycles by latency";' case.dot ||
  fail "run-case: no cluster for scale_add"

"$tpuemu" workload inference-layer --topology 2 --batch 16 --d-model 256 --d-ff 512 --no-data --graph wl.dot \
  > /dev/null || fail "workload --graph: exit code $?"
grep -q '^digraph workload {' wl.dot || fail "no workload digraph"
for s in 0 1 2 3; do grep -q "^  s$s \[shape=" wl.dot || fail "no node for step $s"; done
grep -q '^  s3 \[shape=hexagon' wl.dot || fail "the all-reduce is not drawn as communication"
grep -q '^  s2 -> s3 \[color=red, penwidth=2, fontsize=8, label="partial out"\];' wl.dot || fail "no chain edge 2 -> 3"
grep -q '^  s0 -> s1 \[color=red, penwidth=2, fontsize=8, label="h"\];' wl.dot || fail "no chain edge h from step 0 to 1"

"$tpuemu" run add.llo --no-data --graph add.png > /dev/null 2> png.err && fail "--graph add.png accepted"
grep -q -- '--graph add.png: expected a file ending in .dot or .svg' png.err || fail "png: $(cat png.err)"

if command -v dot > /dev/null; then
  "$tpuemu" run add.llo --no-data --graph add.svg > /dev/null || fail "run --graph add.svg: exit code $?"
  grep -q '<svg' add.svg || fail "add.svg is not SVG"
  "$tpuemu" workload inference-layer --topology 1 --batch 16 --d-model 256 --d-ff 256 --no-data --graph wl.svg \
    > /dev/null || fail "workload --graph wl.svg: exit code $?"
  grep -q '<svg' wl.svg || fail "wl.svg is not SVG"
  # Without dot on PATH: refused before the run, exit 2.
  set +e
  PATH=/nonexistent "$(command -v "$tpuemu" || echo "$tpuemu")" run add.llo --no-data --graph nodot.svg > /dev/null 2> nodot.err
  code=$?
  set -e
  [ "$code" = 2 ] || fail "without dot: exit code $code"
  grep -q "needs Graphviz's \`dot\`, which is not on PATH" nodot.err || fail "without dot: $(cat nodot.err)"
  echo PASS
else
  echo "SKIPPED the .svg checks: Graphviz's dot is not installed (the .dot checks passed)"
  exit 77
fi
