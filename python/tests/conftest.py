"""Fixtures of the tpuemu module's tests: the CLI binary (TPUEMU_BIN, set by
CTest) to generate programs and to cross-check results, and the repository's
test data."""

import os
import pathlib
import subprocess

import pytest

SOURCE = pathlib.Path(os.environ.get("TPUEMU_SOURCE", pathlib.Path(__file__).resolve().parents[2]))
DATA = SOURCE / "tests" / "data"


@pytest.fixture(scope="session")
def tpuemu_bin():
    path = os.environ.get("TPUEMU_BIN")
    if not path or not os.path.exists(path):
        pytest.skip("TPUEMU_BIN (the tpuemu binary) is not set: run through ctest")
    return path


@pytest.fixture(scope="session")
def gen(tpuemu_bin, tmp_path_factory):
    """gen("add", "--n", "4096") -> path of the generated .llo (cached per argument list)."""
    cache = {}
    folder = tmp_path_factory.mktemp("gen")

    def make(*args):
        if args not in cache:
            out = folder / ("_".join(a.strip("-") for a in args) + ".llo")
            subprocess.run([tpuemu_bin, "gen", *args, "-o", str(out)], check=True, stdout=subprocess.DEVNULL)
            cache[args] = out
        return cache[args]

    return make
