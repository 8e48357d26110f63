"""Our Blender-free axis conversion equals ``bpy_extras.io_utils.axis_conversion`` for every valid pair."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bpy

from io_ms3d_mdl.scene.axes import AXES, axis_conversion_matrix

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")


VALID_PAIRS = [(f, u) for f in AXES for u in AXES if f[-1] != u[-1]]


@pytest.mark.parametrize("forward, up", VALID_PAIRS)
def test_matches_blender(forward, up):
    from bpy_extras.io_utils import axis_conversion

    expected = np.array(axis_conversion(from_forward=forward, from_up=up))
    np.testing.assert_allclose(axis_conversion_matrix(forward, up), expected, atol=1e-12)
