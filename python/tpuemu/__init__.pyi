# Type stub of the tpuemu package (python/tpuemu/__init__.py; docs/python.md).
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

report_schema_version: int

class Error(Exception): ...
class BadInput(Error): ...

class AssemblyError(BadInput):
    file: str
    line: int
    col: int
    def __init__(self, message: str, file: str = ..., line: int = ..., col: int = ...) -> None: ...

class InternalError(Error): ...

class Program:
    @property
    def name(self) -> str: ...
    @property
    def bundles(self) -> int: ...
    def disassemble(self) -> str: ...

_Array = np.ndarray
_Outputs = Mapping[Union[int, str], Union[_Array, List[_Array]]]

class Result:
    cycles: int
    seconds: float
    report: Dict[str, Any]
    fault: Optional[Mapping[str, Any]]
    outputs: _Outputs
    bits: _Outputs

class CaseResult(Result):
    name: str
    passed: bool
    failure: str
    compared: bool
    elements: int
    mismatches: int
    first_mismatch: Optional[int]
    first_mismatch_index: Optional[Tuple[int, ...]]
    first_got: str
    first_expected: str
    exact: bool
    rtol: float
    atol: float
    max_relative_error: float
    max_ulp: float
    summary: str
    output: Optional[_Array]
    expected: Optional[_Array]

class ProgramFault(Error):
    chip: Optional[int]
    core: Optional[int]
    bundle: Optional[int]
    file: str
    line: int
    col: int
    result: Result

_ProgramLike = Union[Program, str, os.PathLike[str]]

def load(path: Union[str, os.PathLike[str]]) -> Program: ...
def assemble(text_or_path: Union[str, os.PathLike[str]], name: str = ...) -> Program: ...
def chips() -> List[str]: ...
def run(program: Union[_ProgramLike, Sequence[Tuple[_ProgramLike, Mapping[int, str]]]],
        chip: Optional[str] = ...,
        inputs: Optional[Mapping[Union[int, str], Union[_Array, Sequence[_Array], Any]]] = ...,
        topology: Optional[str] = ...,
        *,
        no_data: bool = ...,
        strict: bool = ...,
        set: Sequence[str] = ...,
        chip_file: Optional[str] = ...,
        wrap: Optional[str] = ...,
        force: bool = ...,
        routing: str = ...,
        max_cycles: Optional[int] = ...,
        quantum: int = ...,
        trace: Optional[str] = ...,
        vcd: Optional[str] = ...,
        memory_profile: Optional[str] = ...,
        raise_on_fault: bool = ...) -> Result: ...
def collective(op: str = ...,
               topology: str = ...,
               sizes: Union[str, int, Sequence[int]] = ...,
               chip: Optional[str] = ...,
               *,
               axes: Optional[str] = ...,
               algo: str = ...,
               proto: str = ...,
               dtype: str = ...,
               piece: Optional[int] = ...,
               no_data: bool = ...,
               set: Sequence[str] = ...,
               chip_file: Optional[str] = ...,
               wrap: Optional[str] = ...,
               force: bool = ...,
               routing: str = ...,
               max_cycles: Optional[int] = ...,
               keep_outputs: bool = ...) -> List[Dict[str, Any]]: ...
def workloads() -> List[Dict[str, Any]]: ...
def workload(name: str,
             chip: Optional[str] = ...,
             topology: str = ...,
             *,
             no_data: bool = ...,
             set: Sequence[str] = ...,
             chip_file: Optional[str] = ...,
             wrap: Optional[str] = ...,
             force: bool = ...,
             routing: str = ...,
             max_cycles: Optional[int] = ...,
             trace: Optional[Union[str, os.PathLike[str]]] = ...,
             **options: Any) -> Dict[str, Any]: ...
def run_case(case_dir: Union[str, os.PathLike[str]],
             chip: Optional[str] = ...,
             *,
             strict: bool = ...,
             set: Sequence[str] = ...,
             chip_file: Optional[str] = ...,
             rtol: float = ...,
             atol: float = ...,
             row_max: Optional[Mapping[str, str]] = ...,
             max_cycles: Optional[int] = ...,
             quantum: int = ...,
             trace: Optional[str] = ...,
             vcd: Optional[str] = ...,
             memory_profile: Optional[str] = ...,
             tlp: bool = ...,
             raise_on_fault: bool = ...) -> CaseResult: ...
