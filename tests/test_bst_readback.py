"""The independent read-back harness (tests/bst_oracle.py) proven on a hand-written QC whose every number is known:
Blender Source Tools reads it in the bpy wheel, and what it builds is what the QC says, in Source's space (Z up,
one unit a Blender unit). The decompiled samples go through the same harness in test_decompile_readback.py."""

from __future__ import annotations

import math

import bst_oracle
import numpy as np
import pytest
from conftest import bpy

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")

QC = """$modelname "tiny/tiny.mdl"
$cdmaterials "models/tiny/"
$body "body" "tiny_ref.smd"
$sequence "idle" "idle.smd" fps 10 loop
"""
REF = """version 1
nodes
0 "root" -1
1 "arm" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 2 0 0 1.5707963
end
triangles
skin
0 0 0 0 0 0 1 0 0
1 1 0 2 0 0 1 1 0 2 0 0.5 1 0.5
1 0 1 2 0 0 1 0 1
end
"""
IDLE = """version 1
nodes
0 "root" -1
1 "arm" 0
end
skeleton
time 0
0 0 0 0 0 0 0
1 0 0 2 0 0 1.5707963
time 1
0 0 0 1 0 0 0
1 0 0 2 0.5 0 1.5707963
end
"""


def euler(x: float, y: float, z: float) -> np.ndarray:
    """Source's (and Blender's XYZ) Euler order: R = Rz·Ry·Rx."""
    cx, sx, cy, sy, cz, sz = math.cos(x), math.sin(x), math.cos(y), math.sin(y), math.cos(z), math.sin(z)
    rx = np.array([[1, 0, 0], [0, cx, -sx], [0, sx, cx]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cz, -sz, 0], [sz, cz, 0], [0, 0, 1]])
    return rz @ ry @ rx


def frame(position, angles) -> np.ndarray:
    m = np.eye(4)
    m[:3, :3] = euler(*angles)
    m[:3, 3] = position
    return m


@pytest.fixture
def tiny(tmp_path, blender):
    bst_oracle.require_bst()
    for name, text in (("tiny.qc", QC), ("tiny_ref.smd", REF), ("idle.smd", IDLE)):
        (tmp_path / name).write_text(text)
    return bst_oracle.import_qc(tmp_path / "tiny.qc")


def test_blender_source_tools_builds_what_the_qc_says(tiny):
    assert tiny.armature is not None
    assert set(tiny.meshes) == {"tiny_ref"}
    rest = bst_oracle.rest_matrices(tiny.armature)
    expected_rest = {"root": np.eye(4), "arm": frame((0, 0, 2), (0, 0, math.pi / 2))}
    bst_oracle.compare_rest(expected_rest, rest, size=2.0)

    mesh = bst_oracle.triangles(tiny.meshes.values())
    expected = bst_oracle.Triangles(
        positions=np.array([[[0, 0, 0], [1, 0, 2], [0, 1, 2]]], float),
        normals=np.array([[[0, 0, 1]] * 3], float),
        uvs=np.array([[[0, 0], [1, 0], [0, 1]]], float),
        weights=[[{"root": 1.0}, {"root": 0.5, "arm": 0.5}, {"arm": 1.0}]],
        materials=["skin"],
    )
    bst_oracle.compare_meshes(expected, mesh, size=2.0)
    rolled = bst_oracle.Triangles(  # the same triangle starting at another corner: still equal (order-free)
        np.roll(expected.positions, 1, axis=1),
        np.roll(expected.normals, 1, axis=1),
        np.roll(expected.uvs, 1, axis=1),
        [expected.weights[0][-1:] + expected.weights[0][:-1]],
        ["skin"],
    )
    bst_oracle.compare_meshes(rolled, mesh, size=2.0)

    assert set(tiny.animations) == {"idle"}
    tiny.animations["idle"]()
    frames = bst_oracle.bst_frames(tiny.armature)
    assert frames == [0.0, 1.0]
    poses = bst_oracle.pose_matrices(tiny.armature, frames)
    root_1 = frame((0, 0, 1), (0, 0, 0))
    expected_poses = {
        "root": np.stack([np.eye(4), root_1]),
        "arm": np.stack([expected_rest["arm"], root_1 @ frame((0, 0, 2), (0.5, 0, math.pi / 2))]),
    }
    bst_oracle.compare_poses(expected_poses, poses, size=2.0, what="idle")


def test_the_harness_sees_every_kind_of_difference(tiny):
    rest = bst_oracle.rest_matrices(tiny.armature)
    moved = {**rest, "arm": rest["arm"] @ frame((0, 0, 1e-3), (0, 0, 0))}
    with pytest.raises(AssertionError, match="bone arm: rest differs"):
        bst_oracle.compare_rest(moved, rest, size=2.0)
    with pytest.raises(AssertionError, match="one side only"):
        bst_oracle.compare_rest({"root": rest["root"]}, rest, size=2.0)

    mesh = bst_oracle.triangles(tiny.meshes.values())
    for change, why in (
        (lambda t: t.positions.__setitem__((0, 1, 0), 1.001), "no equal there"),
        (lambda t: t.uvs.__setitem__((0, 1, 0), 0.5), "no equal there"),
        (lambda t: t.normals.__setitem__((0, 0), (0, 1, 0)), "normals differ"),
        (lambda t: t.weights[0].__setitem__(1, {"root": 1.0}), "weights"),
        (lambda t: t.materials.__setitem__(0, "other"), "skin"),
    ):
        copy = bst_oracle.Triangles(
            mesh.positions.copy(),
            mesh.normals.copy(),
            mesh.uvs.copy(),
            [list(w) for w in mesh.weights],
            list(mesh.materials),
        )
        change(copy)
        with pytest.raises(AssertionError, match=why):
            bst_oracle.compare_meshes(copy, mesh, size=2.0)

    tiny.animations["idle"]()
    poses = bst_oracle.pose_matrices(tiny.armature, [0.0, 1.0])
    shifted = {k: v.copy() for k, v in poses.items()}
    shifted["arm"][1, 0, 3] += 1e-3
    with pytest.raises(AssertionError, match="bone arm frame 1"):
        bst_oracle.compare_poses(shifted, poses, size=2.0, what="idle")


def test_without_the_oracle_the_harness_skips_with_the_way_to_set_it_up(monkeypatch, tmp_path):
    monkeypatch.setenv("IO_MS3D_MDL_BST", str(tmp_path / "absent"))
    monkeypatch.delenv("IO_MS3D_MDL_REQUIRE_BST", raising=False)
    with pytest.raises(pytest.skip.Exception, match=r"scripts/oracle_bst\.py"):
        bst_oracle.require_bst()


def test_where_the_oracle_is_optional_it_is_none_or_a_failure_where_required(monkeypatch, tmp_path):
    """The GUI tour leaves its re-import out without it (``optional_bst``), but not where CI requires it."""
    monkeypatch.setenv("IO_MS3D_MDL_BST", str(tmp_path / "absent"))
    monkeypatch.delenv("IO_MS3D_MDL_REQUIRE_BST", raising=False)
    assert bst_oracle.optional_bst() is None
    monkeypatch.setenv("IO_MS3D_MDL_REQUIRE_BST", "1")
    with pytest.raises(pytest.fail.Exception, match=r"scripts/oracle_bst\.py"):
        bst_oracle.optional_bst()
