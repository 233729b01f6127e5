"""tpuemu.collective against `tpuemu collective` and the host reference."""

import json
import subprocess

import pytest

import tpuemu


def test_all_reduce_is_bit_exact_and_equals_the_cli(tpuemu_bin, tmp_path):
    rows = tpuemu.collective("all-reduce", "4x4", sizes="64K,256K")
    assert [r["bytes"] for r in rows] == [65536, 262144]
    for r in rows:
        assert r["check"] == "bit-exact" and r["ok"]
        assert r["report"]["chips"] == 16 and r["cycles"] == r["report"]["cycles"]
        assert r["measured_over_predicted"] == r["seconds"] / r["predicted_seconds"]
    subprocess.run([tpuemu_bin, "collective", "--op", "all-reduce", "--topology", "4x4", "--sizes", "64K,256K",
                    "--json", str(tmp_path / "c.json")], check=True, stdout=subprocess.DEVNULL)
    cli = json.loads((tmp_path / "c.json").read_text())["rows"]
    for mine, theirs in zip(rows, cli):
        assert mine["cycles"] == theirs["cycles"]
        assert mine["busbw"] == theirs["busbw"] and mine["predicted_seconds"] == theirs["predicted_seconds"]
        assert mine["check"] == theirs["check"]


def test_timing_only_has_the_same_cycles():
    data = tpuemu.collective("all-gather", "2x2x2", sizes=64 * 1024, chip="v5p", dtype="bf16")
    timing = tpuemu.collective("all-gather", "2x2x2", sizes=[64 * 1024], chip="v5p", dtype="bf16", no_data=True)
    assert data[0]["cycles"] == timing[0]["cycles"]
    assert timing[0]["check"] == "skipped (--no-data)"


def test_outputs_on_request():
    rows = tpuemu.collective("all-gather", "4", sizes="16K", axes="x", keep_outputs=True)
    assert len(rows[0]["outputs"]["1"]) == 4


def test_bad_sizes_and_axes():
    with pytest.raises(tpuemu.BadInput, match="multiple"):
        tpuemu.collective("reduce-scatter", "4x4", sizes=1000)
    with pytest.raises(tpuemu.BadInput):
        tpuemu.collective("all-gather", "4x4", sizes="64K", axes="z")
    with pytest.raises(tpuemu.BadInput, match="whole number"):
        tpuemu.collective("all-gather", "4x4", sizes="12Q")


@pytest.mark.parametrize("algo", ["ring", "one-shot", "two-shot", "halving-doubling", "in-network"])
def test_switched_algorithms_are_bit_exact_with_nccl_fields(algo):
    rows = tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", algo=algo, dtype="bf16")
    r = rows[0]
    assert r["check"] == "bit-exact" and r["wrong"] == 0 and r["algorithm"] == algo
    assert r["size"] == 65536 and r["count"] == 32768 and r["type"] == "bfloat16" and r["redop"] == "sum"
    assert r["busbw"] == pytest.approx(r["algbw"] * 2 * 7 / 8)


def test_algorithm_refusals_are_bad_input():
    with pytest.raises(tpuemu.BadInput, match="in-network needs switches"):
        tpuemu.collective("all-reduce", "4x4", sizes="64K", algo="in-network")
    with pytest.raises(tpuemu.BadInput, match="power of two"):
        tpuemu.collective("all-reduce", "node:6", sizes="64K", chip="h100", algo="halving-doubling")
