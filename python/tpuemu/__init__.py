"""tpuemu: a cycle-approximate TPU chip and pod emulator, for Python.

Run LLO programs (hand-written, generated, or a compiler's dumps) on an
emulated chip or pod and get bit-exact outputs, cycle counts and the run
report, the same as ``tpuemu run`` gives::

    import numpy as np, tpuemu
    prog = tpuemu.assemble("matmul.llo")            # a path or LLO text
    r = tpuemu.run(prog, chip="v5e", inputs={0: a, 1: b})
    c = r.outputs[2]                                # numpy array
    print(r.cycles, r.seconds, r.report["roofline"]["bound"])

    c = tpuemu.run_case("shared/llo/softmax_f32")   # a case of the dump corpus
    assert c.passed, c.summary

Every run happens in a child process of its own (SystemC elaborates once per
process), so any number of runs work in one interpreter, a run's failure
never changes the next run, and a crash in the emulator is an InternalError
here. See docs/python.md.
"""

from __future__ import annotations

import os as _os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core

__all__ = [
    "Error", "BadInput", "AssemblyError", "ProgramFault", "InternalError",
    "Program", "Result", "CaseResult", "assemble", "load", "run", "run_case", "collective", "workload", "workloads", "chips",
    "report_schema_version",
]

report_schema_version: int = _core.report_schema_version


class Error(Exception):
    """Base of every tpuemu error."""


class BadInput(Error):
    """What was asked for cannot run: an unknown preset or override, a topology
    the chip cannot form, an input whose dtype or shape does not match its
    operand (the message names the operand, its dtype and shape), a program
    that does not fit the chip. The CLI's exit code 2."""


class AssemblyError(BadInput):
    """LLO text that does not assemble. ``file``, ``line`` and ``col`` locate the
    first problem; the message lists every one as file:line:col."""

    def __init__(self, message: str, file: str = "", line: int = 0, col: int = 0):
        super().__init__(message)
        self.file = file
        self.line = line
        self.col = col


class ProgramFault(Error):
    """The emulated program faulted: bad address, FIFO misuse, a hazard under
    ``strict``, a deadlock, the cycle limit. ``chip``, ``core`` and ``bundle``
    locate it (None for a pod's deadlock, whose message names every waiting
    core, and whose ``file`` is '' and ``line``/``col`` 0; a one-chip
    deadlock names the core's waiting bundle); ``file``/``line``/``col`` are
    the faulting bundle's source (``col`` 0 for the cycle limit); ``result`` is
    the Result (cycles and report up to the fault). The CLI's exit code 3."""

    def __init__(self, fault: Mapping[str, Any], result: "Result"):
        super().__init__(fault["message"])
        self.chip: Optional[int] = fault["chip"]
        self.core: Optional[int] = fault["core"]
        self.bundle: Optional[int] = fault["bundle"]
        self.file: str = fault["file"]
        self.line: int = fault["line"]
        self.col: int = fault["col"]
        self.result = result


class InternalError(Error):
    """A bug in tpuemu (the run's process died, or an unexpected error).
    The CLI's exit code 4. Please report it with the program and inputs."""


_core._register_errors(BadInput, AssemblyError, InternalError)

Program = _core.Program
Program.__doc__ = """An assembled program: ``name`` (where it came from), ``bundles``
(how many), ``disassemble()`` (canonical LLO text)."""


class Result:
    """The result of a run.

    ``cycles``, ``seconds``: emulated time of the slowest core.
    ``report``: the run report as a dict (schema in docs/report.md), the same
    that ``tpuemu run --report`` writes.
    ``outputs``: output buffers by name as numpy arrays in host layout
    (bf16/f8 as float32 values); on a pod, a list with one array per chip.
    ``bits``: the same with bf16/f8 as their uint16/uint8 bit patterns.
    A one-program run names its buffers by operand index: ``outputs[2]``
    and ``outputs["2"]`` are the same. Empty for a timing-only run.
    """

    def __init__(self, raw: Mapping[str, Any], pod: bool):
        self.cycles: int = raw["cycles"]
        self.seconds: float = raw["seconds"]
        self.report: Dict[str, Any] = raw["report"]
        self.fault: Optional[Mapping[str, Any]] = raw["fault"]
        self.outputs = _Buffers({k: (v if pod else v[0]) for k, v in raw["outputs"].items()})
        self.bits = _Buffers({k: (v if pod else v[0]) for k, v in raw["bits"].items()})

    def __repr__(self) -> str:
        return f"<tpuemu.Result {self.cycles} cycles, outputs {sorted(self.outputs)}>"


class CaseResult(Result):
    """The result of a corpus case (``run_case``): the run's Result (``cycles``,
    ``seconds``, ``report``, ``outputs``, ``bits``, ``fault``) and its check
    against the case's expected output.

    ``passed``: every element matched. ``summary``: the verdict as
    ``tpuemu run-case`` prints it ("PASS NAME: ..." / "FAIL NAME: ...", then a
    line per kernel). ``name``: the case folder's name.
    ``exact``: the case is checked bit for bit (its notes do not say
    "NOT bit-exact"); otherwise float32 elements match within
    ``|got - want| <= atol + rtol * |want|`` (``rtol``, ``atol``; NaN matches
    NaN, an infinity itself), and ``max_relative_error`` / ``max_ulp`` are the
    largest differences over finite elements whose bits differ.
    ``elements``, ``mismatches``; ``first_mismatch`` (flat index) and
    ``first_mismatch_index`` (a tuple), ``first_got`` / ``first_expected``
    (as the summary shows them: "1.5 (0x3fc00000)", or a raw code), None / ""
    when nothing differs. ``output``, ``expected``: the arrays compared (bf16/f8
    outputs as raw uint16/uint8 codes when the case has expected.bits.npy;
    None after a fault). ``compared``: False when the output's shape or dtype
    differs from the expected one (``failure`` says so) or the run faulted;
    ``failure`` is "" otherwise. ``report["case"]`` holds pass, mismatches,
    exact, max_relative_error, max_ulp when compared, as ``tpuemu run-case
    --report`` writes it.
    """

    def __init__(self, raw: Mapping[str, Any]):
        super().__init__(raw, pod=False)
        self.name: str = raw["name"]
        self.passed: bool = raw["passed"]
        self.failure: str = raw["failure"]
        self.compared: bool = raw["compared"]
        self.elements: int = raw["elements"]
        self.mismatches: int = raw["mismatches"]
        self.first_mismatch: Optional[int] = raw["first_mismatch"]
        self.first_mismatch_index: Optional[Tuple[int, ...]] = raw["first_mismatch_index"]
        self.first_got: str = raw["first_got"]
        self.first_expected: str = raw["first_expected"]
        self.exact: bool = raw["exact"]
        self.rtol: float = raw["rtol"]
        self.atol: float = raw["atol"]
        self.max_relative_error: float = raw["max_relative_error"]
        self.max_ulp: float = raw["max_ulp"]
        self.summary: str = raw["summary"]
        self.output = raw["output"]
        self.expected = raw["expected"]

    def __repr__(self) -> str:
        return f"<tpuemu.CaseResult {self.name}: {'PASS' if self.passed else 'FAIL'}, {self.cycles} cycles>"


class _Buffers(dict):
    """A dict of output buffers that also takes operand indices as ints."""

    def __getitem__(self, key):
        return super().__getitem__(str(key))

    def __contains__(self, key):
        return super().__contains__(str(key))

    def get(self, key, default=None):
        return super().get(str(key), default)


def load(path: Union[str, "_os.PathLike[str]"]) -> Program:
    """A program from a file: LLO text (.llo, a dump's *-final_bundles.txt)
    or a program image (.tpub). Raises AssemblyError or BadInput."""
    return _core.load(_os.fspath(path))


def _names_a_file(text: str) -> bool:
    if "\n" in text:
        return False
    if _os.path.isfile(text):
        return True
    line = text.strip()
    return bool(line) and "{" not in line and not line.startswith(("//", "#"))


def assemble(text_or_path: Union[str, "_os.PathLike[str]"], name: str = "<string>") -> Program:
    """A program from LLO text, or from a file if ``text_or_path`` names one
    that exists (then as ``load``), or is one line that holds no bundle's
    ``{`` and is no comment (so a path: a missing file is "cannot open
    file", not an unknown mnemonic). ``name`` names text in diagnostics.
    Raises AssemblyError (``.file``, ``.line``, ``.col``) or BadInput."""
    if isinstance(text_or_path, _os.PathLike) or _names_a_file(text_or_path):
        return load(text_or_path)
    return _core.assemble(text_or_path, name)


def chips() -> List[str]:
    """The built-in chip presets (``tpuemu chips`` describes them)."""
    return list(_core.chips())


def _as_program(p: Union[Program, str, "_os.PathLike[str]"]) -> Program:
    if not isinstance(p, (Program, str, _os.PathLike)):
        raise BadInput(f"program: expected a Program, LLO text or a path, got {type(p).__name__}")
    return p if isinstance(p, Program) else assemble(p)


# Argument checks of the functions below: a wrong type or range is BadInput
# naming the argument, as the CLI names its option (not pybind11's TypeError
# listing the binding's signature, nor a value silently truncated).
def _text(name: str, value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, _os.PathLike):
        return _os.fspath(value)
    if not isinstance(value, str):
        raise BadInput(f"{name}: expected text, got {type(value).__name__} {value!r}")
    return value


def _whole(name: str, value: Any, least: int) -> int:
    import operator

    try:
        n = operator.index(value)  # ints and numpy integers; not floats, not bools
    except TypeError:
        raise BadInput(f"{name}: expected a whole number >= {least}, got {type(value).__name__} {value!r}") from None
    if isinstance(value, bool) or n < least:
        raise BadInput(f"{name}: expected a whole number >= {least}, got {value!r}")
    return n


def _texts(name: str, values: Any) -> List[str]:
    if isinstance(values, str):
        raise BadInput(f"{name}: expected a list of \"path=value\" texts, got the text {values!r}")
    return [_text(name, v) for v in values]


def _as_arrays(value: Any) -> List[Any]:
    import numpy  # only runs need it: `import tpuemu` works without numpy

    if isinstance(value, (list, tuple)):
        return [numpy.asarray(v) for v in value]
    return [numpy.asarray(value)]


def run(program: Union[Program, str, Sequence[Tuple[Any, Mapping[int, str]]]],
        chip: Optional[str] = None,
        inputs: Optional[Mapping[Union[int, str], Any]] = None,
        topology: Optional[str] = None,
        *,
        no_data: bool = False,
        strict: bool = False,
        set: Sequence[str] = (),
        chip_file: Optional[str] = None,
        wrap: Optional[str] = None,
        force: bool = False,
        routing: str = "dimension-order",
        max_cycles: Optional[int] = None,
        quantum: int = 1000,
        trace: Optional[str] = None,
        vcd: Optional[str] = None,
        memory_profile: Optional[str] = None,
        raise_on_fault: bool = True) -> Result:
    """Runs a program on an emulated chip, or SPMD on every chip of a pod.

    program: a Program, LLO text or a path; or a chain, a list of
        (program, {operand index: buffer name}) run back to back over named
        buffers (then ``inputs`` and ``outputs`` use the buffer names).
    chip: a preset (``chips()``; default "v5e"); ``chip_file`` a JSON chip file; ``set`` a
        list of "path=value" overrides as ``--set`` takes them.
    inputs: {operand index or buffer name: array}; on a pod an array is given
        to every chip, a list of arrays gives chip c its c-th array. bf16/f8
        operands take float32 values (rounded) or uint16/uint8 bit patterns.
    topology: a pod shape such as "4x4" or "4x4x4"; ``wrap`` "x,z" or "none"
        overrides the preset's wraparound rule; ``force`` allows more chips
        than the preset's largest slice.
    no_data: timing only (same cycles, no arithmetic; no outputs).
    strict: stalls on register hazards are faults (checks a schedule).
    max_cycles, quantum: the cycle limit, and how far a core may run ahead.
    trace, vcd, memory_profile: files to write (Perfetto JSON, VCD, JSON+SVG).
    raise_on_fault: raise ProgramFault when the program faults (else the
        Result's ``fault`` holds it).

    Raises BadInput, AssemblyError, ProgramFault, InternalError.
    """
    if isinstance(program, (list, tuple)):
        steps = [(_as_program(p), {int(k): str(v) for k, v in buffers.items()}) for p, buffers in program]
    else:
        steps = [(_as_program(program), {})]
    if inputs is not None and not isinstance(inputs, Mapping):
        raise BadInput(f"inputs: expected a dict {{operand index or buffer name: array}}, got {type(inputs).__name__}")
    arrays = {str(k): _as_arrays(v) for k, v in (inputs or {}).items()}
    raw = _core.run(steps, _text("chip", chip), _text("chip_file", chip_file), _texts("set", set),
                    _text("topology", topology), _text("wrap", wrap), force, _text("routing", routing), arrays, no_data,
                    strict, 0 if max_cycles is None else _whole("max_cycles", max_cycles, 0), _whole("quantum", quantum, 1),
                    _text("trace", trace), _text("vcd", vcd), _text("memory_profile", memory_profile))
    result = Result(raw, pod=topology is not None)
    if result.fault is not None and raise_on_fault:
        raise ProgramFault(result.fault, result)
    return result


def collective(op: str = "all-gather",
               topology: str = "8x16",
               sizes: Union[str, int, Sequence[int]] = "64K",
               chip: Optional[str] = None,
               *,
               axes: Optional[str] = None,
               algo: str = "bidir-ring",
               proto: str = "auto",
               dtype: str = "f32",
               piece: Optional[Union[str, int]] = None,
               no_data: bool = False,
               set: Sequence[str] = (),
               chip_file: Optional[str] = None,
               wrap: Optional[str] = None,
               force: bool = False,
               routing: str = "dimension-order",
               max_cycles: Optional[int] = None,
               keep_outputs: bool = False) -> List[Dict[str, Any]]:
    """Runs a generated collective on a pod, as ``tpuemu collective`` does.

    op: "all-gather", "reduce-scatter", "all-reduce" or "all-to-all".
    topology: the pod ("4x4", "4x4x4", "node:8", "nvl:72", "fat-tree:2x8",
        ...); ``axes`` the participating axes ("y", "x,y"; default all);
        ``algo`` "ring", "bidir-ring", "multi-axis", "tree",
        "halving-doubling", "one-shot", "two-shot", "in-network", several
        joined by commas (each in turn), or "auto" (per size the least
        predicted time, as ``--algo auto``); ``dtype`` "f32" or "bf16"
        (reductions sum in it).
    proto: switched fabrics: the NCCL protocol, "LL", "LL128", "Simple" or
        "auto" (per run the least predicted time, as ``--proto auto`` and
        NCCL's cost model; the default). On a torus only "auto" (a torus
        has no protocols). It is put into effect after ``set``'s overrides,
        so it wins over a ``fabric.protocol`` there.
    sizes: V in bytes: an int, a list of ints, or text as ``--sizes`` takes
        it ("64K:1G" doubling, "1M,4M"; K, M, G are powers of 1024). Any
        whole number of elements: a size the algorithm cannot split runs
        zero-padded (all-reduce, reduce-scatter, all-gather; not all-to-all),
        its padded bytes travel, and the row's ``padded_bytes`` says what ran
        (= ``bytes`` when nothing was padded); with ``keep_outputs`` each
        chip's output is cut to its user elements (reduce-scatter: its piece
        of the array, shorter or empty on the last ranks).
    no_data: timing only (identical times, no check).
    keep_outputs: also return every chip's output (``outputs["1"]``, raw
        bytes in device layout as uint8).

    Returns one dict per run (per size; with several algorithms, every
    size of the first, then of the next): ``cycles``, ``seconds``, ``algbw``,
    ``busbw``, ``linkbw``, ``link_fraction``, ``predicted_seconds`` (the
    book's formula, also ``predicted_bandwidth_seconds`` /
    ``predicted_latency_seconds`` and ``formula``),
    ``measured_over_predicted`` (None where nothing is predicted: a group
    of one chip), ``check`` ("bit-exact", "MISMATCH on K
    chips" or "skipped (--no-data)"), ``ok``, ``algorithm`` (what ran),
    ``proto`` (the NCCL protocol, None on a torus), ``protocol`` (the
    parameters it ran under: in-network's Simple is "NVLS"),
    ``auto_predictions`` (with an "auto": every candidate, "algorithm" or
    "algorithm/protocol", and its predicted seconds; else empty),
    ``report`` (the pod report),
    ``host_seconds``, ``host_peak_rss_bytes``, ``program`` (the LLO program
    that ran) and ``run_overrides`` (the chip overrides the run added, a
    switched fabric's NCCL protocol and channels: ``run(row["program"],
    chip=..., topology=..., set=row["run_overrides"])`` runs it as it ran).
    Raises BadInput (a size
    that is not whole elements, an all-to-all size the algorithm cannot
    split (naming the multiple it needs), a pod that would not fit the
    host's memory (naming the estimate and the limit)),
    ProgramFault, InternalError.
    """
    if isinstance(sizes, str):
        sizes_text = sizes
    elif isinstance(sizes, (list, tuple)):
        sizes_text = ",".join(str(_whole("sizes", s, 0)) for s in sizes)
    else:
        sizes_text = str(_whole("sizes", sizes, 0))
    rows = _core.collective(_text("op", op), _text("topology", topology), sizes_text, _text("chip", chip),
                            _text("chip_file", chip_file), _texts("set", set), _text("wrap", wrap), force,
                            _text("routing", routing), _text("axes", axes), _text("algo", algo), _text("proto", proto),
                            _text("dtype", dtype), "" if piece is None else str(_whole("piece", piece, 1)), no_data,
                            0 if max_cycles is None else _whole("max_cycles", max_cycles, 0), keep_outputs)
    out = []
    for row in rows:
        if row["fault"] is not None:
            raise ProgramFault(row["fault"], Result(row, pod=True))
        row["outputs"] = {k: v for k, v in row["outputs"].items()}
        del row["bits"]
        out.append(row)
    return out


def workloads() -> List[Dict[str, Any]]:
    """Every registered workload, as ``tpuemu workload --list`` prints them:
    dicts with ``name``, ``summary`` and ``options`` (each ``name``,
    ``default``, ``help``)."""
    return list(_core.workloads())


def workload(name: str,
             chip: Optional[str] = None,
             topology: str = "2x2",
             *,
             no_data: bool = False,
             set: Sequence[str] = (),
             chip_file: Optional[str] = None,
             wrap: Optional[str] = None,
             force: bool = False,
             routing: str = "dimension-order",
             max_cycles: Optional[int] = None,
             trace: Optional[str] = None,
             **options: Any) -> Dict[str, Any]:
    """Runs a workload on a pod, as ``tpuemu workload NAME`` does, and returns
    its report (the dict ``--json`` writes; docs/workloads.md): ``case``,
    ``plan``, ``phases`` (each measured beside the book's prediction),
    ``compute_seconds``, ``communication_seconds``,
    ``exposed_communication_seconds``, ``mfu``, ``hbm_bytes``, ``ici_bytes``,
    ``check``, ``ok``, ``report`` (the run's), ...

    options: the workload's own (``tpuemu.workloads()``), e.g. for
    "sharded-matmul" ``m=512, k=512, n=512, lhs="I_X,J", rhs="J,K_Y",
    plan="ag"``; for "mlp" ``batch=512, d_model=256, d_ff=512,
    strategy="fsdp"``; values are passed as text (``str(value)``), and an
    underscore in a name stands for the option's hyphen (``d_model`` is
    ``--d-model``).

    A mismatch against the host reference is ``ok`` False, not an exception.
    Raises BadInput (unknown workload or option, a bad sharding or size,
    named as its option), ProgramFault, InternalError.
    """
    texts = {key.replace("_", "-"): str(value) for key, value in options.items()}
    raw = _core.workload(_text("name", name), _text("topology", topology), _text("chip", chip),
                         _text("chip_file", chip_file), _texts("set", set), _text("wrap", wrap), force,
                         _text("routing", routing), texts, no_data,
                         0 if max_cycles is None else _whole("max_cycles", max_cycles, 0), _text("trace", trace))
    if raw["fault"] is not None:
        fault = raw["fault"]
        run = raw["report"]
        raise ProgramFault(fault, Result({"cycles": run["cycles"], "seconds": run["seconds"], "report": run,
                                          "fault": fault, "outputs": {}, "bits": {}}, pod=True))
    return raw


def run_case(case_dir: Union[str, "_os.PathLike[str]"],
             chip: Optional[str] = None,
             *,
             strict: bool = False,
             set: Sequence[str] = (),
             chip_file: Optional[str] = None,
             rtol: float = 1e-5,
             atol: float = 1e-30,
             row_max: Optional[Mapping[str, str]] = None,
             max_cycles: Optional[int] = None,
             quantum: int = 1000,
             trace: Optional[str] = None,
             vcd: Optional[str] = None,
             memory_profile: Optional[str] = None,
             tlp: bool = False,
             raise_on_fault: bool = True) -> CaseResult:
    """Runs a case of the dump corpus, as ``tpuemu run-case DIR`` does, and
    checks its output: returns a CaseResult (``passed``, ``summary``,
    ``mismatches``, ...; a failed check is a result, not an exception).

    case_dir: a folder with case.json (shared/llo/README.md): its kernel
        chain runs on one chip over the case's buffers, with its inputs, its
        by-value constants and scalar inputs, and its transposed buffers.
    chip, chip_file, set: as for ``run``.
    rtol, atol: the tolerance where the case is not bit-exact.
    row_max: {buffer: input}: the host provides the buffer as the row maxima
        of a 2-D float32 input (``--row-max NAME=INPUT``; softmax_f32/older/952f7bb
        takes {"m": "x"}).
    strict, max_cycles, quantum, trace, vcd, memory_profile: as for ``run``.
    raise_on_fault: raise ProgramFault (its ``result`` the CaseResult) when
        the program faults (else the CaseResult's ``fault`` holds it).

    tlp: run the case's top-level program, whose copy-in DMAs and
        inlined_calls call the kernels (``tpuemu run-case --tlp``; trace only).
    Raises BadInput (a missing or malformed case.json, input or expected file,
    a scalar input that does not convert; messages as run-case prints them),
    AssemblyError, ProgramFault, InternalError.
    """
    raw = _core.run_case(_text("case_dir", case_dir), _text("chip", chip), _text("chip_file", chip_file),
                         _texts("set", set), strict, 0 if max_cycles is None else _whole("max_cycles", max_cycles, 0),
                         _whole("quantum", quantum, 1), float(rtol), float(atol),
                         {str(k): str(v) for k, v in (row_max or {}).items()}, _text("trace", trace), _text("vcd", vcd),
                         _text("memory_profile", memory_profile), tlp)
    result = CaseResult(raw)
    if result.fault is not None and raise_on_fault:
        raise ProgramFault(result.fault, result)
    return result
