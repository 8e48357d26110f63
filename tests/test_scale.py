"""Scale: bigger synthetic models import in time proportional to their size, within a stated memory bound
(BENCHMARKS.md has the full 1×–1000× curve from ``scripts/scale.py``; here 10× and 100× keep the suite quick)."""

from __future__ import annotations

import pytest
from conftest import bpy, script_module

pytestmark = [
    pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh"),
    pytest.mark.long,
]

KB_PER_UNIT = 1.0  # the bound BENCHMARKS.md states: an import adds at most 1 KB per vertex plus keyframe


def scale_module():
    return script_module("scale")


@pytest.mark.parametrize("kind", ["ms3d", "source"])
def test_time_grows_linearly_and_memory_stays_bounded(kind, tmp_path):
    scale = scale_module()
    make = scale.make_ms3d if kind == "ms3d" else scale.make_source
    per_unit = {}
    for k in (10, 100):
        path = tmp_path / f"scale_{k}.{'ms3d' if kind == 'ms3d' else 'mdl'}"
        size = make(k, path)
        m = scale.measure(path)
        units = size["vertices"] + size["keys"]
        assert m["result"] == ["FINISHED"] and m["actions"] == 1
        assert m["objects"] == (2 if kind == "ms3d" else k + 1)  # mesh(es) and the armature
        assert (m["peak_mb"] - m["base_mb"]) * 1024 < KB_PER_UNIT * units
        per_unit[k] = m["seconds"] / units
    assert per_unit[100] < 3 * per_unit[10]  # 10× the size may not cost more than ~10× the time (with slack)
