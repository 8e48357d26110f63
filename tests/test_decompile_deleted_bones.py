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


SCOUT = "GoodFishMan__mercenaries/models/player/scout.mdl"


def _bone_world(qc: list) -> dict[str, np.ndarray]:
    """Each bone's model-space rest from the QC's $definebone lines (position, then angles in degrees)."""
    world: dict[str, np.ndarray] = {}
    for s in (s for s in qc if s.command == "$definebone"):
        words = [t.text.decode() for t in s.args]
        values = np.array(words[2:8], float)
        local = compose(euler_xyz_to_matrix(np.radians(values[3:])), values[:3])
        world[words[0]] = world[words[1]] @ local if words[1] else local
    return world


def _attachments(qc: list, world: dict[str, np.ndarray]) -> dict[str, tuple[str, np.ndarray]]:
    """Each $attachment's bone and place in the model (``rotate`` is pitch, yaw, roll: about y, z, x)."""
    out = {}
    for s in (s for s in qc if s.command == "$attachment"):
        words = [t.text.decode() for t in s.args]
        y, z, x = (float(w) for w in words[6:9])
        local = compose(euler_xyz_to_matrix(np.radians([x, y, z])), np.array(words[2:5], float))
        out[words[0]] = (words[1], world[words[1]] @ local)
    return out


def test_qc_lines_on_a_deleted_bone_are_re_targeted_or_left_out(tmp_path):
    """scout's left foot deleted: its attachment is on the knee at the same place in the model; its hit box, IK
    chain (and that chain's ikrules), bone-merge line and joint limits are left out, with a warning; the QC reads
    with the strict grammar and no line names the bone; no SMD has it."""
    import qc_grammar

    path = sample_path("source", SCOUT)
    decompile(str(path), str(tmp_path / "plain"), DecompileOptions(definebone=True))
    result = decompile(
        str(path),
        str(tmp_path / "deleted"),
        DecompileOptions(definebone=True, edits=SourceEdits(deleted=["bip_foot_L"])),
    )
    plain_text = (tmp_path / "plain" / "scout.qc").read_bytes()
    text = (tmp_path / "deleted" / "scout.qc").read_bytes()
    plain, qc = qc_grammar.parse(plain_text), qc_grammar.parse(text)
    assert b'"bip_foot_L"' in plain_text and b'"bip_foot_L"' not in text
    world = _bone_world(qc)
    assert "bip_foot_L" not in world and np.allclose(world["bip_toe_L"], _bone_world(plain)["bip_toe_L"], atol=1e-4)
    before, after = _attachments(plain, _bone_world(plain)), _attachments(qc, world)
    assert before["foot_L"][0] == "bip_foot_L" and after["foot_L"][0] == "bip_knee_L"
    for name, (_, place) in before.items():
        assert np.allclose(after[name][1], place, atol=1e-4), name
    count = lambda statements, command: sum(s.command == command for s in statements)  # noqa: E731
    assert count(qc, "$hbox") == count(plain, "$hbox") - 1
    assert count(qc, "$ikchain") == count(plain, "$ikchain") - 1 and b'"lfoot"' not in text
    assert b'ikrule "lfoot"' in plain_text
    assert any("QC lines were left out" in w and "$ikchain 'lfoot'" in w for w in result.warnings)
    for smd in (tmp_path / "deleted").rglob("*.smd"):
        assert "bip_foot_L" not in smd_reader.read(smd).names, smd.name


def test_a_deleted_bones_weight_joins_its_heirs_on_the_same_vertex():
    from io_ms3d_mdl.decompile.source.deleted_bones import fold_skin
    from io_ms3d_mdl.scene.types import MeshData, ObjectData, SkinData

    skeleton = SmdSkeleton(["root", "a", "b", "c"], np.array([-1, 0, 1, 0]))
    deleted = find_deleted(skeleton, ["b"])
    skin = SkinData(
        np.array([[2, 1, -1], [3, 2, 0], [2, -1, -1]], np.int32),
        np.array([[0.5, 0.5, 0], [0.25, 0.75, 0], [1, 0, 0]], np.float32),
    )
    obj = ObjectData(
        "o",
        MeshData(name="o", positions=np.zeros((3, 3), np.float32), triangles=np.zeros((0, 3), np.int32)),
        {},
        skin=skin,
    )
    folded = fold_skin(obj, deleted).skin
    dense = np.zeros((3, 3))
    used = folded.bone_indices >= 0
    np.add.at(dense, (np.nonzero(used)[0], folded.bone_indices[used]), folded.weights[used])
    assert dense.tolist() == [[0, 1, 0], [0, 0.75, 0.25], [0, 1, 0]]  # (written bones: root, a, c)
    assert all(len(set(row[row >= 0].tolist())) == int((row >= 0).sum()) for row in folded.bone_indices)
