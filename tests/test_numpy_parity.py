"""numpy 1 and numpy 2 read every fuzz seed and mutant alike (see ``numpy_parity.py`` for what changed in numpy 2).

Runs where the suite has numpy 2 (the 5.1 and 5.2 passes) and compares with a numpy-1 environment of the same
checkout (4.2–5.0, built by ``scripts/bootstrap.py``; CI builds every pinned version before testing).
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT, TESTS

CASES_PER_SEED = 150

pytestmark = [
    pytest.mark.skipif(np.__version__.startswith("1."), reason="compares numpy 2 (5.1+) with numpy 1"),
    pytest.mark.long,
]


def numpy1_python() -> str:
    """The Python of a numpy-1 environment (5.0's), built on first use like every environment."""
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bootstrap.py"), "env", "5.0"], capture_output=True, text=True
    )
    if run.returncode != 0:
        if os.environ.get("IO_MS3D_MDL_REQUIRE_SAMPLES"):
            pytest.fail(f"the numpy-1 environment could not be set up: {run.stderr.strip()[-300:]}")
        pytest.skip("no numpy-1 environment could be set up here")
    folder = run.stdout.strip().splitlines()[-1]
    return os.path.join(folder, "Scripts", "python.exe") if os.name == "nt" else os.path.join(folder, "bin", "python")


def parity(python: str, out: Path) -> dict:
    run = subprocess.run(
        [python, str(TESTS / "numpy_parity.py"), str(CASES_PER_SEED), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(out.read_text())


def same(a: object, b: object) -> bool:
    """Equal, floats within 1e-6 relative (a different SIMD kernel may round a last bit differently)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return a == b


def test_every_seed_and_mutant_reads_the_same_under_numpy_1_and_2(tmp_path):
    mine = parity(sys.executable, tmp_path / "numpy2.json")
    theirs = parity(numpy1_python(), tmp_path / "numpy1.json")
    assert mine.pop("numpy").startswith("2.") and theirs.pop("numpy").startswith("1.")
    assert mine.keys() == theirs.keys()
    differ = [k for k in mine if not same(mine[k], theirs[k])]
    shown = [(k, str(mine[k])[:200], str(theirs[k])[:200]) for k in differ[:5]]
    assert not differ, f"{len(differ)} of {len(mine)} cases differ, e.g. {shown}"
    assert sum(v[0] == "read" for v in mine.values()) > len(mine) // 2  # most mutants still read: a real comparison
