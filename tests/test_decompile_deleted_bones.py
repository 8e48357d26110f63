"""Bones an export leaves out (deleted in Blender, ``SourceEdits.deleted``), without Blender: the file's own
animations keep every surviving bone where the file poses it, the deleted bone's children re-parented."""

from __future__ import annotations

import numpy as np
import smd_reader
from conftest import sample_path

from io_ms3d_mdl.decompile import DecompileOptions, decompile
from io_ms3d_mdl.decompile.source.deleted_bones import find_deleted
from io_ms3d_mdl.decompile.source.edits import SourceEdits
from io_ms3d_mdl.formats.smd import SmdSkeleton
from io_ms3d_mdl.scene.rotations import compose, euler_xyz_to_matrix

MONSTER = "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"


def world_poses(smd: smd_reader.Smd) -> dict[str, np.ndarray]:
    """Each bone's model-space matrix per frame: (F, 4, 4) by name."""
    times = sorted(smd.frames)
    local = np.array([smd.pose(t) for t in times])  # (F, B, 6)
    matrices = compose(euler_xyz_to_matrix(local[..., 3:]), local[..., :3])
    world = np.empty_like(matrices)
    for b, parent in enumerate(smd.parents.tolist()):  # (parents first)
        world[:, b] = matrices[:, b] if parent < 0 else world[:, parent] @ matrices[:, b]
    return {name: world[:, b] for b, name in enumerate(smd.names)}


def test_a_deleted_bones_children_keep_their_place_in_the_files_animations(tmp_path):
    path = sample_path("source", MONSTER)
    decompile(str(path), str(tmp_path / "plain"), DecompileOptions())
    gone = "turret_box_leftleg_export"
    edits = SourceEdits(deleted=[gone])
    decompile(str(path), str(tmp_path / "deleted"), DecompileOptions(edits=edits))
    animations = sorted(p.name for p in (tmp_path / "plain" / "anims").glob("*.smd"))
    assert animations == sorted(p.name for p in (tmp_path / "deleted" / "anims").glob("*.smd"))
    animated = 0
    for name in animations:
        plain = smd_reader.read(tmp_path / "plain" / "anims" / name)
        folded = smd_reader.read(tmp_path / "deleted" / "anims" / name)
        assert gone in plain.names and folded.names == [n for n in plain.names if n != gone]
        child = folded.names.index("left_leg_knee")
        assert folded.names[folded.parents[child]] == "left_leg_hip"
        before, after = world_poses(plain), world_poses(folded)
        for bone, frames in after.items():
            assert np.abs(frames - before[bone]).max() < 1e-4, (name, bone)
        values = {tuple(f[plain.names.index(gone)]) for f in plain.frames.values() if plain.names.index(gone) in f}
        animated += len(values) > 1
    assert animated  # (the deleted bone moves in some: there its children's frames had to change)


def test_find_deleted_climbs_a_chain_of_deleted_bones():
    skeleton = SmdSkeleton(["root", "a", "b", "c", "d"], np.array([-1, 0, 1, 2, 0]))
    deleted = find_deleted(skeleton, ["a", "b"])
    assert deleted.skeleton.names == ["root", "c", "d"]
    assert deleted.skeleton.parents.tolist() == [-1, 0, 0]
    assert deleted.heir.tolist() == [0, 0, 0, 3, 4]
    assert deleted.written.tolist() == [0, 0, 0, 1, 2]
    assert find_deleted(skeleton, ["elsewhere"]) is None
