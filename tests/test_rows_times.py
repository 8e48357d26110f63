"""``rows_times``' shortcut for axis conversions (a matrix with one non-zero a column): the same bits as einsum,
signed zeros, tiny and huge numbers included, on arrays of every length einsum's vector loops split
differently; other matrices, and rows with an infinity or NaN, go through einsum itself. No Blender."""

from __future__ import annotations

import itertools

import numpy as np

from io_ms3d_mdl.scene.axes import axis_conversion_matrix
from io_ms3d_mdl.scene.rotations import rows_times

VALUES = np.array([0.0, -0.0, 1.5, -2.25, 1e-40, -1e-40, 3.4e38, -3.4e38, 0.1, -7.0], np.float32)
AXES = ["X", "Y", "Z", "-X", "-Y", "-Z"]


def _einsum(rows, m):
    return np.einsum("...j,jk->...k", np.asarray(rows, np.float64), np.asarray(m, np.float64))


def test_axis_conversions_and_scales_give_einsums_bits():
    rng = np.random.default_rng(0)
    checked = 0
    for n in (1, 2, 3, 7, 8, 9, 17, 33, 1001):
        rows = rng.choice(VALUES, (n, 3))
        for forward, up in itertools.product(AXES, AXES):
            if forward[-1] == up[-1]:
                continue
            axes = axis_conversion_matrix(forward, up)
            for scale in (1.0, 0.5, 0.0254, 39.37):
                for m in (axes / scale, axes.T / scale):
                    assert rows_times(rows, m).tobytes() == _einsum(rows, m).tobytes()
                    checked += 1
    assert checked == 9 * 24 * 4 * 2
    corners = rng.choice(VALUES, (50, 3, 3))  # (triangles, corners, xyz)
    m = axis_conversion_matrix("-Y", "Z")
    assert rows_times(corners, m).tobytes() == _einsum(corners, m).tobytes()


def test_other_matrices_and_non_finite_rows_go_through_einsum():
    rng = np.random.default_rng(1)
    rows = rng.normal(size=(100, 3)).astype(np.float32)
    turn = np.array([[0.6, -0.8, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
    assert rows_times(rows, turn).tobytes() == _einsum(rows, turn).tobytes()
    rows[5] = (np.inf, 0.0, 1.0)
    rows[6] = (np.nan, -0.0, 2.0)
    m = axis_conversion_matrix("Z", "Y")
    got, expected = rows_times(rows, m), _einsum(rows, m)
    assert np.isnan(got[5]).any()  # 0 · inf in the product, as einsum has it
    np.testing.assert_array_equal(got, expected)


def test_float32_rows_give_the_float64_products_bits_cast():
    """``rows_times_float32``: float32 all through for a matrix of 0 and ±1 (the normals' axis conversions), the
    same bits as einsum's float64 product cast to float32; scaled or turned matrices and non-finite rows too."""
    from io_ms3d_mdl.scene.rotations import rows_times_float32

    rng = np.random.default_rng(2)
    turn = np.array([[0.6, -0.8, 0.0], [0.8, 0.6, 0.0], [0.0, 0.0, 1.0]])
    for n in (1, 3, 8, 33, 1001):
        rows = rng.choice(VALUES, (n, 3))
        for forward, up in itertools.product(AXES, AXES):
            if forward[-1] == up[-1]:
                continue
            axes = axis_conversion_matrix(forward, up)
            for m in (axes, axes.T, axes / 0.0254, turn):
                got = rows_times_float32(rows, m)
                assert got.dtype == np.float32
                with np.errstate(over="ignore"):  # (3.4e38 / 0.0254: infinite in float32)
                    expected = _einsum(rows, m).astype(np.float32)
                assert got.tobytes() == expected.tobytes()
    rows = rng.choice(VALUES, (20, 3))
    rows[3] = (np.inf, 0.0, -0.0)
    m = axis_conversion_matrix("-Y", "Z")
    np.testing.assert_array_equal(rows_times_float32(rows, m), _einsum(rows, m).astype(np.float32))
