"""The tpuemu module against the CLI and the host reference."""

import json
import os
import subprocess

import numpy as np
import pytest

import tpuemu
from conftest import DATA


def test_chips_lists_the_presets():
    names = tpuemu.chips()
    assert "v5e" in names and "v5p" in names
    assert names == sorted(names)


def test_import_needs_no_run():
    assert tpuemu.report_schema_version >= 1
    assert issubclass(tpuemu.AssemblyError, tpuemu.BadInput)


def test_add_is_bit_exact_and_equals_the_cli(gen, tpuemu_bin, tmp_path):
    llo = gen("add", "--n", "5000")
    rng = np.random.default_rng(1)
    a = rng.standard_normal(5000).astype(np.float32)
    b = rng.standard_normal(5000).astype(np.float32)
    r = tpuemu.run(str(llo), chip="v5e", inputs={0: a, 1: b})
    assert r.outputs[2].dtype == np.float32
    assert np.array_equal(r.outputs[2].view(np.uint32), (a + b).view(np.uint32))
    assert r.outputs["2"] is r.outputs[2]

    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    subprocess.run([tpuemu_bin, "run", str(llo), "--in", f"0={tmp_path}/a.npy", "--in", f"1={tmp_path}/b.npy",
                    "--out", f"2={tmp_path}/c.npy", "--report", f"{tmp_path}/r.json"], check=True,
                   stdout=subprocess.DEVNULL)
    cli = json.loads((tmp_path / "r.json").read_text())
    cli.pop("mxu")  # the CLI's MXU model choice (--mxu)
    assert cli == r.report
    assert r.cycles == cli["cycles"] and r.seconds == cli["seconds"]
    assert np.array_equal(np.load(tmp_path / "c.npy"), r.outputs[2])


def test_report_schema(gen):
    r = tpuemu.run(gen("add", "--n", "1024"), inputs={0: np.ones(1024, np.float32), 1: np.ones(1024, np.float32)})
    rep = r.report
    assert rep["schema"] == "tpuemu-report" and rep["schema_version"] == tpuemu.report_schema_version
    assert rep["chip"] == "v5e" and rep["config"]["name"] == "v5e"
    assert rep["topology"] is None and rep["chips"] == 1 and len(rep["per_chip"]) == 1
    assert rep["cycles"] == r.cycles and rep["fault"] is None
    assert set(rep["stall_cycles"]) == set(rep["per_chip"][0]["cores"][0]["stall_cycles"])


def test_bf16_matmul_values_and_bits(gen):
    llo = gen("matmul", "--m", "16", "--k", "256", "--n", "128")
    rng = np.random.default_rng(2)
    a = rng.standard_normal((16, 256)).astype(np.float32)
    b = rng.standard_normal((256, 128)).astype(np.float32)
    # bf16 operands: float32 values are rounded; uint16 bit patterns are taken as they are.
    bits = lambda x: ((x.view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16).astype(np.uint16)
    r1 = tpuemu.run(llo, inputs={0: a, 1: b})
    r2 = tpuemu.run(llo, inputs={0: bits(a), 1: bits(b)})
    assert np.array_equal(r1.outputs[2], r2.outputs[2])
    ref = (bits(a).astype(np.uint32) << 16).view(np.float32).astype(np.float64) @ \
          (bits(b).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    assert np.allclose(r1.outputs[2], ref, rtol=1e-5, atol=1e-4)


def test_timing_only_has_the_same_cycles_and_no_outputs(gen):
    llo = gen("add", "--n", "100000")
    x = np.zeros(100000, np.float32)
    with_data = tpuemu.run(llo, inputs={0: x, 1: x})
    timing = tpuemu.run(llo, no_data=True)
    assert timing.cycles == with_data.cycles
    assert len(timing.outputs) == 0


def test_pod_per_chip_inputs(gen):
    llo = gen("add", "--n", "2048")
    xs = [np.full(2048, c, np.float32) for c in range(4)]
    r = tpuemu.run(llo, inputs={0: xs, 1: np.ones(2048, np.float32)}, topology="2x2")
    assert r.report["chips"] == 4 and r.report["topology"]["dims"] == [2, 2]
    assert len(r.outputs[2]) == 4
    for c in range(4):
        assert np.array_equal(r.outputs[2][c], xs[c] + 1)


def test_determinism_two_runs_identical(gen):
    llo = gen("matmul", "--m", "8", "--k", "128", "--n", "128")
    rng = np.random.default_rng(3)
    inputs = {0: rng.standard_normal((8, 128)).astype(np.float32), 1: rng.standard_normal((128, 128)).astype(np.float32)}
    r1 = tpuemu.run(llo, inputs=inputs)
    r2 = tpuemu.run(llo, inputs=inputs)
    assert json.dumps(r1.report, sort_keys=True) == json.dumps(r2.report, sort_keys=True)
    assert r1.outputs[2].tobytes() == r2.outputs[2].tobytes()


def test_thousand_runs_in_one_process(gen):
    """1000 small runs in one interpreter: each equals the first (the first equals the CLI, above)."""
    llo = tpuemu.load(gen("add", "--n", "1024"))
    a = np.arange(1024, dtype=np.float32)
    first = tpuemu.run(llo, inputs={0: a, 1: a})
    for i in range(999):
        r = tpuemu.run(llo, inputs={0: a, 1: a})
        assert r.cycles == first.cycles, i
        assert r.outputs[2].tobytes() == first.outputs[2].tobytes(), i
