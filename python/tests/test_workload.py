"""tpuemu.workload against `tpuemu workload` and the book's cases."""

import json
import subprocess

import pytest

import tpuemu

SMALL = dict(m=512, k=512, n=512)


def test_workloads_lists_sharded_matmul_with_its_options():
    names = {w["name"]: w for w in tpuemu.workloads()}
    assert "sharded-matmul" in names
    options = {o["name"]: o["default"] for o in names["sharded-matmul"]["options"]}
    assert options["plan"] == "auto" and "lhs" in options and "rhs" in options


def test_case_3_all_reduce_is_bit_exact_and_equals_the_cli(tpuemu_bin, tmp_path):
    r = tpuemu.workload("sharded-matmul", topology="2x2", lhs="I_Y,J_X", rhs="J_X,K", **SMALL)
    assert r["case"] == 3 and r["plan"] == "ar" and r["ok"]
    assert r["check"].startswith("bit-exact")
    assert [p["op"] for p in r["phases"] if p["kind"] == "communication"] == ["all-reduce"]
    assert r["seconds"] == r["report"]["seconds"] and r["report"]["chips"] == 4
    assert 0 < r["mfu"] < 1
    assert r["exposed_communication_seconds"] == pytest.approx(r["seconds"] - r["compute_seconds"])
    subprocess.run([tpuemu_bin, "workload", "sharded-matmul", "--topology", "2x2", "--lhs", "I_Y,J_X", "--rhs", "J_X,K",
                    "--m", "512", "--k", "512", "--n", "512", "--json", str(tmp_path / "w.json")],
                   check=True, stdout=subprocess.DEVNULL)
    cli = json.loads((tmp_path / "w.json").read_text())
    assert cli["cycles"] == r["cycles"] and cli["phases"] == r["phases"] and cli["check"] == r["check"]


def test_timing_only_has_the_same_cycles():
    data = tpuemu.workload("sharded-matmul", topology="2x2", lhs="I_X,J", rhs="J,K_X", **SMALL)
    timing = tpuemu.workload("sharded-matmul", topology="2x2", lhs="I_X,J", rhs="J,K_X", no_data=True, **SMALL)
    assert data["case"] == 4 and data["plan"] == "ag" and data["ok"]
    assert timing["cycles"] == data["cycles"] and timing["check"] == "skipped (--no-data)"


def test_bad_options_are_bad_input():
    with pytest.raises(tpuemu.BadInput, match="unknown mesh axis 'Z'"):
        tpuemu.workload("sharded-matmul", lhs="I_Z,J")
    with pytest.raises(tpuemu.BadInput, match="--plan rs: J is not split"):
        tpuemu.workload("sharded-matmul", plan="rs")
    with pytest.raises(tpuemu.BadInput, match="unknown option --mm"):
        tpuemu.workload("sharded-matmul", mm=4)
    with pytest.raises(tpuemu.BadInput, match="unknown workload"):
        tpuemu.workload("no-such-workload")


def test_collective_matmul_overlaps_what_blocking_exposes():
    small = dict(m=512, k=1024, n=2048)
    blocking = tpuemu.workload("collective-matmul", topology="2x4", variant="blocking", **small)
    steps = tpuemu.workload("collective-matmul", topology="2x4", variant="overlapped-steps", **small)
    overlapped = tpuemu.workload("collective-matmul", topology="2x4", variant="overlapped", **small)
    assert blocking["ok"] and steps["ok"] and overlapped["ok"] and overlapped["variant"] == "overlapped"
    assert overlapped["check"].startswith("bit-exact") and len(overlapped["phases"]) == 1
    assert steps["exposed_communication_seconds"] < 0.5 * blocking["exposed_communication_seconds"]
    # One program per chip, its accumulators in VMEM: faster than the chain of steps. Not than
    # gathering first at this shift-bound size (a shift 4.9 us, a chunk's matmul 0.64 us): on
    # v5e 2x4, whose Y line has no wraparound, the all-gather runs on the folded bidirectional
    # ring (programs/collectives.hpp) in 16.06 us against the overlapped 17.61 us (before the fold,
    # its closing hops ran back along the line and blocking was the slowest of the three).
    assert overlapped["seconds"] < steps["seconds"]
    with pytest.raises(tpuemu.BadInput, match="fewer than the MXU pipeline"):
        tpuemu.workload("collective-matmul", topology="2x4", m=128, k=2048, n=1024)


def test_inference_layer_options_with_underscores():
    r = tpuemu.workload("inference-layer", topology="2", batch=16, d_model=256, d_ff=512, model_axis="X")
    assert r["ok"] and r["check"].startswith("bit-exact") and r["d_model"] == 256 and r["model_ways"] == 2
    assert [p["kind"] for p in r["phases"]] == ["compute", "compute", "compute", "communication"]
    assert r["book"]["bound"] == "HBM" and 238 < r["book"]["critical_batch"] < 242


def test_mlp_strategies_are_bit_exact_and_take_hyphenated_options_with_underscores():
    options = {o["name"] for w in tpuemu.workloads() if w["name"] == "mlp" for o in w["options"]}
    assert {"batch", "d-model", "d-ff", "strategy", "microbatches", "seed"} <= options
    r = tpuemu.workload("mlp", topology="2x4", strategy="fsdp+tp", batch=512, d_model=256, d_ff=512)
    assert r["ok"] and r["check"].startswith("bit-exact") and r["strategy"] == "fsdp+tp"
    assert r["data_axes"] == "X" and r["model_axes"] == "Y" and r["d_model"] == 256
    ops = [(p["op"], p["axes"]) for p in r["phases"] if p["kind"] == "communication"]
    assert ops[:3] == [("all-gather", "Y"), ("all-gather", "X"), ("all-gather", "X")]
    assert r["book"]["t_math_seconds"] > 0 and r["book"]["threshold_at"]["batch"] > 0
    with pytest.raises(tpuemu.BadInput, match="--strategy 'zero3'"):
        tpuemu.workload("mlp", strategy="zero3")


def test_attention_splits_heads_and_all_reduces_once():
    r = tpuemu.workload("attention", topology="2x2", model_axis="XY", batch=1, seq=256, d_model=512, heads=4,
                        d_head=128)
    assert r["ok"] and r["check"].startswith("bit-exact") and r["model_ways"] == 4 and r["per_chip"]["heads"] == 1
    comms = [(p["op"], p["axes"], p["bytes"]) for p in r["phases"] if p["kind"] == "communication"]
    assert comms == [("all-reduce", "YX", 1 * 256 * 512 * 4)]
    assert len([p for p in r["phases"] if p["kind"] == "compute" and "k" in p]) == 2 + 2 * 1 * 1
    assert [p["op"] for p in r["phases"] if p.get("op") == "softmax"] == ["softmax"]
    assert r["book"]["t_math_seconds"] > 0 and r["book"]["t_comms_seconds"] > 0
    with pytest.raises(tpuemu.BadInput, match="--heads 6: the heads are split over X"):
        tpuemu.workload("attention", topology="4", heads=6)
