"""Errors as Python exceptions, and no state carried from a failed run to the next."""

import numpy as np
import pytest

import tpuemu
from conftest import DATA


def test_assembly_error_has_file_line_col():
    with pytest.raises(tpuemu.AssemblyError) as e:
        tpuemu.assemble("{ %s1 = smov 1 }\n{ %s2 = nosuchop %s1 }\n", name="bad.llo")
    assert e.value.file == "bad.llo" and e.value.line == 2 and e.value.col > 0
    assert "bad.llo:2:" in str(e.value)


@pytest.mark.parametrize("path", ["nope.llo", "missing/dir/k.tpub"])
def test_a_missing_file_is_named_so(path):
    # It was read as program text: "unknown mnemonic 'nope.llo'".
    with pytest.raises(tpuemu.BadInput, match="cannot open file"):
        tpuemu.assemble(path)
    with pytest.raises(tpuemu.BadInput, match="cannot open file"):
        tpuemu.run(path)


@pytest.mark.parametrize("text", ["", "  \n", "// only a comment\n"])
def test_program_without_bundles_is_refused(text):
    # As `tpuemu run` refuses such a file: nothing to run, not a 0-cycle result.
    with pytest.raises(tpuemu.AssemblyError, match="no bundles") as e:
        tpuemu.assemble(text, name="empty.llo")
    assert e.value.file == "empty.llo" and e.value.line == 1
    with pytest.raises(tpuemu.AssemblyError, match="no bundles"):
        tpuemu.run(text)


def test_malformed_environment_is_bad_input(gen, monkeypatch):
    llo = gen("add", "--n", "1024")  # the tpuemu CLI refuses the variable as well
    monkeypatch.setenv("TPUEMU_MXU_DENORMALS", "bar")
    with pytest.raises(tpuemu.BadInput, match="TPUEMU_MXU_DENORMALS='bar'"):
        tpuemu.run(llo, no_data=True)


def test_arguments_of_the_wrong_type_or_range_are_named(gen):
    llo = gen("add", "--n", "1024")
    with pytest.raises(tpuemu.BadInput, match=r"^program: expected a Program, LLO text or a path, got NoneType"):
        tpuemu.run(None)
    with pytest.raises(tpuemu.BadInput, match=r"^inputs: expected a dict .* got list"):
        tpuemu.run(llo, inputs=[np.zeros(1024, np.float32)])
    with pytest.raises(tpuemu.BadInput, match=r"^chip: expected text, got int 5"):
        tpuemu.run(llo, chip=5, no_data=True)
    with pytest.raises(tpuemu.BadInput, match=r"^max_cycles: expected a whole number >= 0, got -1"):
        tpuemu.run(llo, max_cycles=-1, no_data=True)
    with pytest.raises(tpuemu.BadInput, match=r"^quantum: expected a whole number >= 1, got 0"):
        tpuemu.run(llo, quantum=0, no_data=True)
    with pytest.raises(tpuemu.BadInput, match=r"^set: expected a list of \"path=value\" texts"):
        tpuemu.run(llo, set="hbm.bandwidth=1e12", no_data=True)
    # A size of 1024.5 bytes was truncated to 1024.
    with pytest.raises(tpuemu.BadInput, match=r"^sizes: expected a whole number >= 0, got float 1024.5"):
        tpuemu.collective("all-gather", "2", sizes=[1024.5], no_data=True)
    assert tpuemu.collective("all-gather", "2", sizes=[np.int64(1024)], no_data=True)[0]["bytes"] == 1024


def test_unreadable_program_is_bad_input(tmp_path):
    with pytest.raises(tpuemu.BadInput):
        tpuemu.load(tmp_path / "missing.llo")


def test_unknown_chip_is_bad_input(gen):
    with pytest.raises(tpuemu.BadInput, match="nosuchchip"):
        tpuemu.run(gen("add", "--n", "1024"), chip="nosuchchip", no_data=True)


def test_bad_override_and_topology(gen):
    llo = gen("add", "--n", "1024")
    with pytest.raises(tpuemu.BadInput, match="mxu.count"):
        tpuemu.run(llo, set=["mxu.count=1000000"], no_data=True)
    with pytest.raises(tpuemu.BadInput):
        tpuemu.run(llo, topology="3x0", no_data=True)


def test_wrong_shape_and_dtype_name_the_operand(gen):
    llo = gen("add", "--n", "1024")
    ok = np.zeros(1024, np.float32)
    with pytest.raises(tpuemu.BadInput, match="1024"):
        tpuemu.run(llo, inputs={0: np.zeros(1000, np.float32), 1: ok})
    with pytest.raises(tpuemu.BadInput, match="f32"):
        tpuemu.run(llo, inputs={0: np.zeros(1024, np.int32), 1: ok})
    with pytest.raises(tpuemu.BadInput, match=r"operand 1 \(f32\[1024\], input\) has no data: .*inputs\[1\]"):
        tpuemu.run(llo, inputs={0: ok})
    with pytest.raises(tpuemu.BadInput, match="no operand 7"):
        tpuemu.run(llo, inputs={0: ok, 1: ok, 7: ok})
    with pytest.raises(tpuemu.BadInput, match="dtype"):
        tpuemu.run(llo, inputs={0: np.zeros(1024, np.complex64), 1: ok})


def test_program_fault_has_chip_core_bundle():
    with pytest.raises(tpuemu.ProgramFault) as e:
        tpuemu.run(DATA / "run" / "out_of_range.llo")
    f = e.value
    assert (f.chip, f.core, f.bundle) == (0, 0, 1)
    assert f.file.endswith("out_of_range.llo") and f.line == 4
    assert f.result.report["fault"] == str(f)


def test_fault_without_raising_and_cycle_limit():
    r = tpuemu.run(DATA / "run" / "endless_loop.llo", max_cycles=100, raise_on_fault=False)
    assert r.fault is not None and "cycle limit" in r.fault["message"]


def test_deadlock_on_a_pod_has_no_single_place():
    with pytest.raises(tpuemu.ProgramFault) as e:
        tpuemu.run(DATA / "run" / "pod_deadlock.llo", topology="2", no_data=True)
    assert "deadlock" in str(e.value).lower()


def test_a_failed_run_does_not_change_the_next(gen):
    llo = gen("add", "--n", "1024")
    a = np.arange(1024, dtype=np.float32)
    before = tpuemu.run(llo, inputs={0: a, 1: a})
    with pytest.raises(tpuemu.ProgramFault):
        tpuemu.run(DATA / "run" / "out_of_range.llo")
    with pytest.raises(tpuemu.BadInput):
        tpuemu.run(llo, inputs={0: a})
    after = tpuemu.run(llo, inputs={0: a, 1: a})
    assert after.report == before.report
    assert after.outputs[2].tobytes() == before.outputs[2].tobytes()


def test_a_pod_fault_leaves_no_systemc_chatter(capfd):
    # Every core of a pod that faults stops the simulation: SystemC's W545
    # warning and its "stopped by user" info were printed by the module.
    with pytest.raises(tpuemu.ProgramFault):
        tpuemu.run(DATA / "run" / "pod_fault.llo", topology="4x2", no_data=True)
    captured = capfd.readouterr()
    for text in (captured.out, captured.err):
        assert "sc_stop" not in text and "Simulation stopped" not in text, text
