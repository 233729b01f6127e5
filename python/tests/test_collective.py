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
    with pytest.raises(tpuemu.BadInput, match="bytes 1001 must be a multiple of the 4-byte f32 element"):
        tpuemu.collective("reduce-scatter", "4x4", sizes=1001)
    with pytest.raises(tpuemu.BadInput, match="must be positive"):
        tpuemu.collective("all-reduce", "3", chip="v5e", sizes=[0])
    with pytest.raises(tpuemu.BadInput, match="must be a multiple of 288"):  # all-to-all is not padded
        tpuemu.collective("all-to-all", "3", chip="v5e", sizes=1000)
    with pytest.raises(tpuemu.BadInput):
        tpuemu.collective("all-gather", "4x4", sizes="64K", axes="z")
    with pytest.raises(tpuemu.BadInput, match="whole number"):
        tpuemu.collective("all-gather", "4x4", sizes="12Q")


def test_padded_sizes_are_bit_exact_and_report_what_moved():
    # 1000 B over 3 chips: bidir-ring splits multiples of 3 x 2 directions x 32 B = 192 B; it runs as 1152 B.
    rows = tpuemu.collective("all-reduce", "3", chip="v5e", sizes="1000,1152", keep_outputs=True)
    padded, whole = rows
    assert padded["bytes"] == 1000 and padded["padded_bytes"] == 1152 and padded["count"] == 250
    assert whole["bytes"] == 1152 and whole["padded_bytes"] == 1152
    assert padded["check"] == "bit-exact" and padded["wrong"] == 0 and padded["ok"]
    assert padded["cycles"] == whole["cycles"]  # the padded bytes travel
    assert [len(o) for o in padded["outputs"]["1"]] == [250] * 3  # the user's elements only
    assert [len(o) for o in whole["outputs"]["1"]] == [288] * 3
    # reduce-scatter of 1000 B (bf16) over 6 chips: chunks of 192 B, the last chip's holds 40 user bytes.
    rs = tpuemu.collective("reduce-scatter", "1x6", chip="v5e", sizes=1000, dtype="bf16", keep_outputs=True)[0]
    assert rs["padded_bytes"] == 1152 and rs["check"] == "bit-exact"
    assert [len(o) for o in rs["outputs"]["1"]] == [96] * 5 + [20]


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


def test_proto_auto_equals_the_cli(tpuemu_bin, tmp_path):
    # The same plan as `tpuemu collective --algo auto --proto auto` (the default proto): algorithm, protocol,
    # the predictions it chose from and the cycles, per size.
    rows = tpuemu.collective("all-reduce", "node:8", sizes="32K,16M", chip="h100", algo="auto", no_data=True)
    subprocess.run([tpuemu_bin, "collective", "--op", "all-reduce", "--chip", "h100", "--topology", "node:8",
                    "--sizes", "32K,16M", "--algo", "auto", "--no-data", "--json", str(tmp_path / "c.json")],
                   check=True, stdout=subprocess.DEVNULL)
    cli = json.loads((tmp_path / "c.json").read_text())["rows"]
    assert len(rows) == len(cli) == 2
    for mine, theirs in zip(rows, cli):
        assert mine["algorithm"] == theirs["algorithm"] and mine["proto"] == theirs["proto"]
        assert mine["proto"] in ("LL", "LL128", "Simple")
        assert mine["cycles"] == theirs["cycles"]
        assert mine["auto_predictions"] == theirs["auto_predictions"]
        # The choice is the least prediction of all (algorithm, protocol) pairs.
        best = min(mine["auto_predictions"], key=mine["auto_predictions"].get)
        assert best == mine["algorithm"] + "/" + mine["proto"]
        assert len(mine["auto_predictions"]) > 10


def test_proto_names_the_protocol_a_run_uses():
    by = {p: tpuemu.collective("all-reduce", "node:8", sizes="1M", chip="h100", algo="ring", proto=p,
                               no_data=True)[0] for p in ("LL", "ll128", "Simple")}
    assert [by[p]["proto"] for p in by] == ["LL", "LL128", "Simple"]
    assert [by[p]["protocol"] for p in by] == ["LL", "LL128", "Simple"]
    assert len({by[p]["cycles"] for p in by}) == 3  # each protocol has its own rate and latencies
    assert all(r["auto_predictions"] == {} for r in by.values())
    # auto over one algorithm: its three protocols, and the pick is one of them.
    auto = tpuemu.collective("all-reduce", "node:8", sizes="1M", chip="h100", algo="ring", no_data=True)[0]
    assert sorted(auto["auto_predictions"]) == ["ring/LL", "ring/LL128", "ring/Simple"]
    assert auto["cycles"] == {r["proto"]: r["cycles"] for r in by.values()}[auto["proto"]]
    # in-network's Simple runs under NCCL's NVLS parameters.
    nvls = tpuemu.collective("all-reduce", "node:8", sizes="1M", chip="h100", algo="in-network", proto="Simple",
                             no_data=True)[0]
    assert nvls["proto"] == "Simple" and nvls["protocol"] == "NVLS"


def test_proto_wins_over_a_set_protocol():
    simple = tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", algo="ring", proto="Simple")[0]
    over = tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", algo="ring", proto="Simple",
                             set=["fabric.protocol=LL"])[0]
    assert over["cycles"] == simple["cycles"] and over["check"] == "bit-exact"


def test_proto_on_a_torus_is_none():
    rows = tpuemu.collective("all-gather", "4x4", sizes="64K", algo="ring,auto", no_data=True)
    assert [r["proto"] for r in rows] == [None, None]
    assert rows[0]["auto_predictions"] == {} and rows[1]["auto_predictions"]


def test_proto_refusals_are_bad_input():
    with pytest.raises(tpuemu.BadInput, match="NCCL protocols run on switched fabrics"):
        tpuemu.collective("all-reduce", "4x4", sizes="64K", proto="LL")
    with pytest.raises(tpuemu.BadInput, match="not an NCCL protocol"):
        tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", proto="LL64")
    with pytest.raises(tpuemu.BadInput, match="does not run with --proto LL"):
        tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", algo="in-network", proto="LL")
    with pytest.raises(tpuemu.BadInput, match="unknown algorithm 'pat'"):
        tpuemu.collective("all-reduce", "node:8", sizes="64K", chip="h100", algo="pat")
