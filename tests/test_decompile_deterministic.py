"""The decompiler writes the same bytes every time, also twice in one process: civilian's animation SMDs once
differed by a last digit in a different file each run (numpy's arctan2 on strided views took SIMD or scalar paths
by the alignment of its internal buffers; ``decompile/source/angles`` now feeds it contiguous copies)."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_decompile_outputs import models

from io_ms3d_mdl.decompile import decompile


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", ["civilian.mdl"])
def test_decompiling_twice_in_one_process_writes_the_same_bytes(name, tmp_path):
    found = [p for p in models() if p.name == name]
    if not found:
        pytest.skip(f"{name} is not among the shared samples")
    runs = []
    for k in range(3):
        out = tmp_path / f"run{k}"
        decompile(str(found[0]), str(out))
        runs.append(_files(out))
    assert len(runs[0]) > 100
    for other in runs[1:]:
        assert other.keys() == runs[0].keys()
        differing = [f for f in runs[0] if runs[0][f] != other[f]]
        assert not differing, f"differ between runs: {differing[:5]}"
