"""The dump corpus (TPUEMU_LLO, set by CTest: ../shared/llo) through tpuemu.run_case: every
case.json passes, and its cycles and report equal those of `tpuemu run-case DIR --report R.json`.
Cases the CTest suite marks unsupported, or runs with arguments the module does not take, are
skipped with the reason (tests/CMakeLists.txt: TPUEMU_UNSUPPORTED_CASES, TPUEMU_CASE_ARGS_*)."""

import json
import os
import pathlib
import re
import shutil
import subprocess

import numpy as np
import pytest

import tpuemu
from conftest import DATA, SOURCE

CORPUS = pathlib.Path(os.environ.get("TPUEMU_LLO", SOURCE.parent / "shared" / "llo"))


def _ctest_case_settings():
    """(unsupported case names, {case name: extra run-case arguments}) from tests/CMakeLists.txt."""
    text = (SOURCE / "tests" / "CMakeLists.txt").read_text()
    text = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    unsupported = set()
    for m in re.finditer(r"set\(TPUEMU_UNSUPPORTED_CASES\b([^)]*)\)", text):
        unsupported.update(m.group(1).split())
    args = {m.group(1): m.group(2).split() for m in re.finditer(r"set\(TPUEMU_CASE_ARGS_(\S+)\s+([^)]*)\)", text)}
    return unsupported, args


def _module_options(args):
    """run-case arguments as run_case keywords; None if some argument has no keyword here."""
    options = {}
    i = 0
    while i < len(args):
        if args[i] == "--row-max" and i + 1 < len(args) and "=" in args[i + 1]:
            name, source = args[i + 1].split("=", 1)
            options.setdefault("row_max", {})[name] = source
            i += 2
        else:
            return None
    return options


def _cases():
    if not CORPUS.is_dir():
        return [pytest.param(None, id="corpus-absent")]
    return [pytest.param(p.parent, id=str(p.parent.relative_to(CORPUS))) for p in sorted(CORPUS.glob("**/case.json"))]


UNSUPPORTED, CASE_ARGS = _ctest_case_settings()


@pytest.mark.parametrize("case_dir", _cases())
def test_corpus_case_passes_and_equals_the_cli(case_dir, tpuemu_bin, tmp_path):
    if case_dir is None:
        pytest.skip(f"LLO corpus not found at {CORPUS} (TPUEMU_LLO)")
    name = str(case_dir.relative_to(CORPUS))
    if name in UNSUPPORTED:
        pytest.skip(f"{name}: marked unsupported in tests/CMakeLists.txt (TPUEMU_UNSUPPORTED_CASES)")
    args = CASE_ARGS.get(name, [])
    options = _module_options(args)
    if options is None:
        pytest.skip(f"{name}: needs run-case arguments {' '.join(args)} that tpuemu.run_case does not take")

    r = tpuemu.run_case(case_dir, **options)
    assert r.passed, r.summary
    assert r.summary.startswith(f"PASS {case_dir.name}: ")
    assert r.mismatches == 0 and r.first_mismatch is None and r.compared and r.failure == ""
    assert r.elements == r.output.size == r.expected.size
    assert r.report["case"] == {"pass": True, "mismatches": 0, "exact": r.exact,
                                "max_relative_error": r.max_relative_error, "max_ulp": r.max_ulp}

    report = tmp_path / "r.json"
    cli = subprocess.run([tpuemu_bin, "run-case", str(case_dir), "--report", str(report), *args],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert cli.stdout.rstrip("\n") == r.summary
    cli_report = json.loads(report.read_text())
    assert r.cycles == cli_report["cycles"]
    assert cli_report == r.report


def test_scalar_input_case_equals_the_cli(tpuemu_bin, tmp_path):
    """The repository's own case (by-value scalars from inputs), with or without the corpus."""
    case_dir = DATA / "case_scalar_input"
    r = tpuemu.run_case(case_dir)
    assert r.passed and r.exact and r.elements == 1024, r.summary
    assert np.array_equal(r.outputs["output"], r.output)
    assert r.output.tobytes() == np.load(case_dir / "expected.npy").tobytes() == r.expected.tobytes()
    report = tmp_path / "r.json"
    cli = subprocess.run([tpuemu_bin, "run-case", str(case_dir), "--report", str(report)], capture_output=True,
                         text=True, check=True)
    assert cli.stdout.rstrip("\n") == r.summary
    assert json.loads(report.read_text()) == r.report


def test_a_failed_check_is_a_result(tpuemu_bin, tmp_path):
    case_dir = tmp_path / "case"
    shutil.copytree(DATA / "case_scalar_input", case_dir)
    expected = np.load(case_dir / "expected.npy")
    expected.flat[130] += 1
    np.save(case_dir / "expected.npy", expected)
    r = tpuemu.run_case(case_dir)
    assert not r.passed and r.compared and r.mismatches == 1
    assert r.first_mismatch == 130 and r.first_mismatch_index == (1, 2)
    assert r.summary.startswith("FAIL case: 1 of 1024 elements differ (bit-exact case); first at [1,2]: got ")
    assert r.report["case"]["pass"] is False and r.report["case"]["mismatches"] == 1
    cli = subprocess.run([tpuemu_bin, "run-case", str(case_dir)], capture_output=True, text=True)
    assert cli.returncode == 1 and cli.stdout.rstrip("\n") == r.summary


def test_case_errors_are_bad_input(tmp_path):
    with pytest.raises(tpuemu.BadInput, match=r"case.json: cannot open file"):
        tpuemu.run_case(tmp_path)
    (tmp_path / "case.json").write_text('{"kernels": 3}\n')
    with pytest.raises(tpuemu.BadInput, match=r"case.json: not a case description: the top level: no field 'kernel_chain'$"):
        tpuemu.run_case(tmp_path)
    (tmp_path / "case.json").write_text('{"kernel_chain": {"dump": 1}}\n')
    with pytest.raises(tpuemu.BadInput, match=r"not a case description: kernel_chain: expected an array, got object"):
        tpuemu.run_case(tmp_path)
    with pytest.raises(tpuemu.BadInput, match=r"--row-max m=nothing: 'nothing' is not a 2-D float32 input"):
        tpuemu.run_case(DATA / "case_scalar_input", row_max={"m": "nothing"})
    with pytest.raises(tpuemu.BadInput, match=r"rtol -1: expected a finite number >= 0"):
        tpuemu.run_case(DATA / "case_scalar_input", rtol=-1)
    with pytest.raises(tpuemu.BadInput, match=r"unknown chip preset 'v9z'"):
        tpuemu.run_case(DATA / "case_scalar_input", chip="v9z")


def _tlp_cases():
    if not CORPUS.is_dir():
        return [pytest.param(None, id="corpus-absent")]
    return [pytest.param(p.parent, id=str(p.parent.relative_to(CORPUS))) for p in sorted(CORPUS.glob("**/case.json"))
            if isinstance(json.loads(p.read_text()).get("tlp_dump"), str)]


@pytest.mark.parametrize("case_dir", _tlp_cases())
def test_top_level_program_passes_and_equals_the_cli(case_dir, tpuemu_bin, tmp_path):
    """The case's top-level program (run-case --tlp) through the module."""
    if case_dir is None:
        pytest.skip(f"LLO corpus not found at {CORPUS} (TPUEMU_LLO)")
    r = tpuemu.run_case(case_dir, tlp=True)
    assert r.passed, r.summary
    assert r.report["steps"][0]["kernel"].startswith("top-level program ")
    report = tmp_path / "r.json"
    cli = subprocess.run([tpuemu_bin, "run-case", "--tlp", str(case_dir), "--report", str(report)],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stdout + cli.stderr
    assert cli.stdout.rstrip("\n") == r.summary
    assert json.loads(report.read_text()) == r.report
