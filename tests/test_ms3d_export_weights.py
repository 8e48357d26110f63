"""MilkShape export of weights, the shortcuts of ``scene/ms3d/export.py``: the largest-remainder rank taken by
comparisons equals the double stable argsort it replaces, and weights that come largest first (as the Blender
reader gives them, the sort skipped) write the same file as the same influences in any column order. No Blender."""

from __future__ import annotations

import numpy as np

from io_ms3d_mdl.formats.ms3d.writer import write_ms3d_bytes
from io_ms3d_mdl.scene.ms3d.export import _stable_rank, scene_to_ms3d
from io_ms3d_mdl.scene.types import BoneData, MeshData, ObjectData, SceneData, SkeletonData, SkinData


def test_rank_by_comparisons_is_the_double_stable_argsort():
    rng = np.random.default_rng(2)
    keys = -rng.choice([0.0, 0.25, 0.5, 0.5, 0.75, 0.1], (4000, 4))
    keys[::9, 1] = np.nan
    keys[::13] = np.nan
    keys[::7, 2] = -0.0
    keys[:100] = -rng.random((100, 4))
    argsorted = np.argsort(np.argsort(keys, axis=1, kind="stable"), axis=1, kind="stable")
    np.testing.assert_array_equal(_stable_rank(keys.T).T, argsorted)


def _scene(ids: np.ndarray, weights: np.ndarray) -> SceneData:
    nv = len(ids)
    mesh = MeshData(
        name="skin",
        positions=np.arange(nv * 3, dtype=np.float32).reshape(-1, 3),
        triangles=np.arange(nv - nv % 3, dtype=np.int32).reshape(-1, 3),
    )
    bones = [BoneData(f"b{i}", i - 1, np.eye(4), 1.0) for i in range(8)]
    return SceneData(
        name="s", objects=[ObjectData("skin", mesh, {}, skin=SkinData(ids, weights))], skeleton=SkeletonData("r", bones)
    )


def test_weights_largest_first_write_what_any_column_order_writes():
    rng = np.random.default_rng(4)
    nv = 3000
    ids = np.stack([rng.permutation(8)[:5] for _ in range(nv)]).astype(np.int32)
    weights = rng.choice(np.float32([0.0, 0.1, 0.2, 0.25, 1 / 3, 0.5, 0.7]), (nv, 5)).astype(np.float32)
    weights[::3] = rng.random((len(range(0, nv, 3)), 5)).astype(np.float32)
    ids[::17, 3:] = -1
    order = np.argsort(-weights, axis=1, kind="stable")  # largest first, as the Blender reader gives them
    falling = np.take_along_axis(ids, order, axis=1), np.take_along_axis(weights, order, axis=1)
    shuffle = np.stack([rng.permutation(5) for _ in range(nv)])
    shuffled = np.take_along_axis(ids, shuffle, axis=1), np.take_along_axis(weights, shuffle, axis=1)
    # Equal weights keep their column order either way: only rows without ties may be shuffled.
    tied = np.array([len(set(w[i >= 0].tolist())) < (i >= 0).sum() for i, w in zip(*falling, strict=True)])
    shuffled = tuple(np.where(tied[:, None], f, s) for f, s in zip(falling, shuffled, strict=True))
    assert tied.any() and not tied.all()
    written = [write_ms3d_bytes(scene_to_ms3d(_scene(*skin))) for skin in (falling, shuffled)]
    assert written[0] == written[1]


def test_the_one_warning_of_dropped_influences_names_each_object_and_its_count():
    """Vertices past four influences lose their smallest, said once for the whole export, each object named with
    its count (the first three of them, then how many more)."""
    five = np.tile(np.arange(5, dtype=np.int32), (6, 1))
    four = np.where(np.arange(5) < 4, five, -1).astype(np.int32)
    weights = np.full((6, 5), 0.2, dtype=np.float32)
    objects = []
    for name, ids, over in (("a", five, 6), ("b", four, 0), ("c", five, 6), ("d", five, 6), ("e", five, 6)):
        scene = _scene(ids.copy(), weights.copy())
        objects.append(ObjectData(name, scene.objects[0].mesh, {}, skin=scene.objects[0].skin))
        assert over == ((ids >= 0).sum(axis=1) > 4).sum()
    scene = _scene(five, weights)
    scene.objects = objects
    scene_to_ms3d(scene)
    dropped = [w for w in scene.warnings if "joint influences" in w]
    assert dropped == [
        "24 vertices had more than 4 joint influences ('a' 6, 'c' 6, 'd' 6 and 1 more object); the smallest were "
        "dropped and the rest rescaled"
    ]
