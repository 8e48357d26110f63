"""The finite guard checks an action's keys once per shared array (converters hand out views of a few arrays per
action); every repair and count must be what checking each bone's arrays gives."""

from __future__ import annotations

import numpy as np

from io_ms3d_mdl.scene.finite import replace_non_finite
from io_ms3d_mdl.scene.types import ActionData, BoneChannels, SceneData


def _action(frames: np.ndarray, quats: np.ndarray, locs: np.ndarray, spans: list[tuple[int, int]]) -> ActionData:
    """Channels that are views of the three arrays, as ``scene.source.animation._split`` makes them."""
    channels = [BoneChannels(i, frames[a:b], quats[a:b], frames[a:b], locs[a:b]) for i, (a, b) in enumerate(spans)]
    return ActionData("a", channels, (0.0, 10.0))


def _arrays(n: int = 6) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    frames = np.arange(n, dtype=np.float64)
    quats = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1)) * 0.5
    return frames, quats, np.ones((n, 3))


def test_views_of_finite_arrays_stay_untouched():
    frames, quats, locs = _arrays()
    scene = SceneData("s", actions=[_action(frames, quats, locs, [(0, 3), (3, 6)])])
    replace_non_finite(scene)
    assert not scene.warnings
    assert np.array_equal(frames, np.arange(6.0)) and (quats[:, 0] == 0.5).all()


def test_non_finite_values_in_views_are_repaired_and_counted_once():
    frames, quats, locs = _arrays()
    frames[4] = np.nan  # shared by the rotation and location frames of bone 1: repaired (and counted) once
    quats[1, 2] = np.inf  # the whole quaternion becomes the identity
    locs[5, 0] = -np.inf
    scene = SceneData("s", actions=[_action(frames, quats, locs, [(0, 3), (3, 6)])])
    replace_non_finite(scene)
    assert frames[4] == 0.0 and locs[5, 0] == 0.0
    assert np.array_equal(quats[1], [1.0, 0.0, 0.0, 0.0]) and (quats[[0, 2, 3, 4, 5], 0] == 0.5).all()
    assert any(w.startswith("3 values in the file were not usable") for w in scene.warnings)


def test_bad_values_outside_every_view_are_neither_repaired_nor_counted():
    frames, quats, locs = _arrays()
    frames[5] = np.nan  # the channels only use rows 0..4
    scene = SceneData("s", actions=[_action(frames, quats, locs, [(0, 2), (2, 5)])])
    replace_non_finite(scene)
    assert np.isnan(frames[5]) and not scene.warnings


def test_arrays_of_their_own_are_checked_each():
    channels = [
        BoneChannels(
            0, np.array([0.0, np.nan]), np.array([[1.0, 0, 0, 0], [np.nan, 0, 0, 0]]), np.zeros(0), np.zeros((0, 3))
        ),
        BoneChannels(
            1, np.array([0.0]), np.array([[1.0, 0, 0, 0]]), np.array([np.inf]), np.array([[np.nan, 1.0, 2.0]])
        ),
    ]
    scene = SceneData("s", actions=[ActionData("a", channels, (0.0, 1.0))])
    replace_non_finite(scene)
    assert channels[0].rotation_frames[1] == 0.0 and np.array_equal(channels[0].rotations[1], [1.0, 0, 0, 0])
    assert channels[1].location_frames[0] == 0.0 and np.array_equal(channels[1].locations[0], [0.0, 1.0, 2.0])
    assert any(w.startswith("4 values in the file were not usable") for w in scene.warnings)


def test_placements_checked_together_equal_one_at_a_time():
    """The empties' matrices are checked all at once; each must come out as ``_rigid`` makes it alone."""
    from io_ms3d_mdl.scene.finite import _placements, _rigid

    turned = np.eye(4)
    turned[:3, :3] = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    turned[:3, 3] = (-0.0, 2.5, -7.0)
    nan, far, flat, mirrored, skewed_row, nearly = (np.eye(4) for _ in range(6))
    nan[1, 2] = np.nan
    far[0, 3] = 1e12
    flat[:3, :3] = [[0.0, 0.0, 0.0], [-6.2e26, 1e-44, 0.0], [0.0, 0.0, 0.0]]
    mirrored[0, 0] = -1.0
    skewed_row[3] = (0.0, 1.0, 0.0, 1.0)
    nearly[:3, :3] *= 1.00002  # within _rigid's tolerance, outside the quick test's
    huge = np.full((4, 4), 1e300)
    matrices = [turned, np.eye(4), nan, far, flat, mirrored, skewed_row, nearly, huge, -np.eye(4)]
    together, count = _placements([m.copy() for m in matrices])
    alone = [_rigid(m.copy()) for m in matrices]
    assert count == sum(bad for _, bad in alone)
    for got, (expected, _) in zip(together, alone, strict=True):
        assert got.tobytes() == expected.tobytes()  # the same bits, -0.0 included
    assert _placements([]) == ([], 0)


def test_arrays_whose_sum_overflows_are_checked_element_by_element_quietly():
    """A clean array is recognised by one sum; huge finite values overflow it, and are then checked one by one
    (nothing replaced, nothing counted, no warning), while inf and -inf side by side are repaired."""
    import warnings

    from io_ms3d_mdl.scene.types import MeshData, ObjectData

    huge = np.full((4, 3), 3e38, dtype=np.float32)
    broken = np.array([[np.inf, -np.inf, 1.0]], dtype=np.float32)
    scene = SceneData("m", objects=[ObjectData("a", MeshData("a", huge, np.zeros((0, 3), np.int32)))])
    scene.objects.append(ObjectData("b", MeshData("b", broken, np.zeros((0, 3), np.int32))))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        replace_non_finite(scene)
    assert (huge == np.float32(3e38)).all()
    assert broken.tolist() == [[0.0, 0.0, 1.0]]
    assert any(w.startswith("2 values in the file were not usable numbers") for w in scene.warnings)
