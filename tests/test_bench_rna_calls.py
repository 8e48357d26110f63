"""``scripts/bench_rna_calls.py`` times the bulk calls an import makes per F-curve, so that a Blender's own costs
can be told apart from ours: each call is made on curves holding the keys it names, and does what it names."""

from __future__ import annotations

import math
import sys

import numpy as np
import pytest
from conftest import ROOT, bpy

sys.path.insert(0, str(ROOT / "scripts"))

pytestmark = pytest.mark.blender


def test_every_call_is_timed_on_what_it_names(blender):
    import bench_rna_calls

    from io_ms3d_mdl.blender.animation import _fcurves

    measured = bench_rna_calls.measure(runs=1)
    assert len(measured) == 16 and all(math.isfinite(us) and us > 0 for us in measured.values())
    assert len(bench_rna_calls.table(measured)) == 3 + len(measured)
    curves = [c for a in bpy.data.actions if a.name.startswith("rna calls") for c in _fcurves(a)]
    assert len(curves) == 3 * bench_rna_calls.CURVES + bench_rna_calls.CURVES // 10  # 1-, 20-, 2,000-key, grown
    assert sum(len(c.keyframe_points) == bench_rna_calls.LONG for c in curves) == bench_rna_calls.CURVES // 10
    keys = bench_rna_calls.KEYS
    full = [c for c in curves if len(c.keyframe_points) == keys]
    assert len(full) == bench_rna_calls.CURVES
    for fcurve in full[:3]:
        co = np.zeros(2 * keys, dtype=np.float32)
        fcurve.keyframe_points.foreach_get("co", co)
        np.testing.assert_array_equal(co, np.arange(2 * keys))  # set, and sorted: update() left them in place
        assert {k.interpolation for k in fcurve.keyframe_points} == {"LINEAR"}
