"""A bone renamed in Blender (issue 33) exports as the file's bone under its new name: the same place in the
hierarchy, weights and frames, and every QC line that named it naming the new name; in the bpy wheel, read back by
Blender Source Tools."""

from __future__ import annotations

import re

import pytest
from conftest import sample_path
from test_blender_source_export import MONSTER, UNEDITED, differences, export, goldsrc_models, imported

pytestmark = pytest.mark.blender

NEW = "renamed_in_blender"


def _qc(files: dict[str, bytes]) -> str:
    return next(n for n in files if n.endswith(".qc"))


def _most_named(qc: bytes, armature) -> str:
    """The bone the QC names most often (hit boxes, attachments, bone followers...)."""
    text = qc.decode("latin-1")
    return max((b.name for b in armature.data.bones), key=lambda n: text.count(f'"{n}"'))


def _rename(bpy, armature, old: str, new: str) -> None:
    """As the Outliner does it: Blender renames the vertex groups and the actions' curves with the bone."""
    armature.data.bones[old].name = new
    assert new in armature.data.bones


def assert_only_renamed(before: dict[str, bytes], after: dict[str, bytes], renames: dict[str, str]) -> None:
    """Every file of ``after`` is ``before``'s with each quoted old name written new (SMD nodes, every QC line; a
    solid's mass in a QC comment), and nothing else differs: the same files, node count and order, weights and
    frames."""
    assert set(after) == set(before)
    for name, data in before.items():
        if name.endswith((".qc", ".smd", ".vta")):  # (all at once: two bones may swap names)
            pattern = "|".join(re.escape(old) for old in renames)
            data = re.sub(
                f'(?<=")({pattern})(?=")|(?<=// )({pattern})(?=: )'.encode(),
                lambda m: renames[m.group(0).decode()].encode(),
                data,
            )
        assert after[name] == data, differences({name: data}, {name: after[name]})


def _nodes(smd: bytes) -> list[str]:
    import smd_reader

    return smd_reader.parse(smd).names


@pytest.mark.parametrize("stamp", ["stamped", "older import"])
def test_a_renamed_bone_exports_under_its_new_name_and_blender_source_tools_reads_it_back(blender, tmp_path, stamp):
    """monster_cube: the bone the QC names most renamed in the Outliner. Every SMD and the QC are the unedited
    export's with the new name for the old; Blender Source Tools builds the renamed bone at the same rest and
    weights the meshes to it as Blender does. An older import (no stamp on its bones) finds the rename by the
    bone's rest."""
    import bst_oracle
    import qc_grammar

    from io_ms3d_mdl.blender.armature import BONE_INDEX

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    qc = _qc(before)
    old = _most_named(before[qc], armature)
    assert before[qc].count(f'"{old}"'.encode()) >= 2
    if stamp == "older import":
        for bone in armature.data.bones:
            del bone[BONE_INDEX]
    _rename(bpy, armature, old, NEW)
    body = [o for o in model.all_objects if o.type == "MESH" and o.vertex_groups.get(NEW) is not None]
    assert body
    ours_rest = bst_oracle.rest_matrices(armature)
    ours = {obj.name: bst_oracle.triangles([obj]) for obj in body}
    for tris in ours.values():  # (the SMDs name an imported material by its texture)
        tris.materials = [str(bpy.data.materials[m].get("source_texture", m)) for m in tris.materials]

    after = export(bpy, tmp_path / "after")
    assert_only_renamed(before, after, {old: NEW})
    smds = [n for n in after if n.endswith(".smd")]
    assert any(n.startswith("anims/") for n in smds)
    for name in smds:  # (an animation SMD may list fewer nodes: the same ones)
        nodes, was = _nodes(after[name]), _nodes(before[name])
        assert nodes == [NEW if n == old else n for n in was] and old not in nodes, name
    assert NEW in _nodes(after[next(n for n in smds if n.startswith("anims/") and old in _nodes(before[n]))])
    qc_grammar.check_file(tmp_path / "after" / qc)

    for obj in list(model.all_objects):  # our objects out of the way: Blender Source Tools' take their names
        bpy.data.objects.remove(obj)
    for action in list(bpy.data.actions):
        bpy.data.actions.remove(action)
    theirs = bst_oracle.import_qc(tmp_path / "after" / qc)
    their_rest = bst_oracle.rest_matrices(theirs.armature)
    assert NEW in their_rest and old not in their_rest
    bst_oracle.compare_rest(ours_rest, their_rest, 100.0)
    for name, tris in ours.items():  # the weights by bone name: the renamed bone's as Blender has them
        mesh = theirs.meshes[name]
        assert mesh.vertex_groups.get(NEW) is not None
        bst_oracle.compare_meshes(tris, bst_oracle.triangles([mesh]), 100.0)


def test_renamed_bones_are_renamed_in_every_qc_command_and_the_included_models_animations(blender, tmp_path):
    """civilian: two bones renamed at once, the root (``$rootbone``, ``$bonemerge``, ``$hbox``) and a foot
    (``$ikchain``, ``$attachment``, ``$hbox``, ``$jointconstrain``, ``$jointmassbias``, the collision model's and
    the included model's animations, matched to the model's bones by their file names)."""
    bpy = blender
    model = imported(bpy, sample_path("source", UNEDITED[4]))
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    renames = {"bip_pelvis": "hips_renamed", "bip_foot_L": "left_foot_renamed"}
    for old, new in renames.items():
        _rename(bpy, armature, old, new)
    after = export(bpy, tmp_path / "after")
    assert_only_renamed(before, after, renames)
    qc = after[_qc(after)].decode()
    for line in (
        '$rootbone "hips_renamed"',
        '$ikchain "lfoot" "left_foot_renamed"',
        '$jointconstrain "left_foot_renamed"',
    ):
        assert line in qc, line
    included = [n for n in after if n.startswith("anims/civilian_animations/")]
    assert included and all("left_foot_renamed" in _nodes(after[n]) for n in included)


def test_a_renamed_bone_in_a_model_with_flexes(blender, tmp_path):
    """scout: the bone the QC names most renamed; the VTA (its skeleton is a placeholder root: only its frames
    count) stays as it was, and its flexes' vertices keep their weights on the renamed bone."""
    bpy = blender
    model = imported(bpy, sample_path("source", UNEDITED[3]))
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    old = _most_named(before[_qc(before)], armature)
    _rename(bpy, armature, old, NEW)
    after = export(bpy, tmp_path / "after")
    assert_only_renamed(before, after, {old: NEW})
    assert any(n.endswith(".vta") for n in after)


def test_a_renamed_bone_whose_parent_is_deleted_and_that_was_moved_keeps_its_new_name(blender, tmp_path):
    """monster_cube: a bone moved and its parent deleted, then renamed: the export is the one before the rename,
    with the new name (under its grandparent, at its new rest, with its parent's frames folded in)."""
    import smd_reader

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    gone, grandparent, old = "turret_box_leftleg_export", "left_leg_hip", "left_leg_knee"
    assert armature.data.bones[old].parent.name == gone
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    bones = armature.data.edit_bones
    bones.remove(bones[gone])
    bones[old].head.z += 0.5
    bones[old].tail.z += 0.5
    bpy.ops.object.mode_set(mode="OBJECT")
    unrenamed = export(bpy, tmp_path / "unrenamed")
    _rename(bpy, armature, old, NEW)
    after = export(bpy, tmp_path / "after")
    assert_only_renamed(unrenamed, after, {old: NEW})
    reference = smd_reader.parse(after["monster_a_model.smd"], "monster_a_model.smd")
    assert gone not in reference.names
    assert reference.names[reference.parents[reference.names.index(NEW)]] == grandparent
    assert any(n.startswith("anims/") and NEW in _nodes(d) for n, d in after.items())


def test_a_renamed_bone_keeps_the_keys_edited_in_blender(blender, tmp_path):
    """monster_cube: an imported action's keys edited for one bone (so the animation is written from Blender), then
    that bone renamed: the export is the one before the rename, with the new name."""
    from test_blender_source_export import _edit_bone_keys

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    action = max((a for a in bpy.data.actions if "source_animation" in a), key=lambda a: int(a["source_frames"]))
    moved, _ = _edit_bone_keys(bpy, armature, action)
    old = moved.name
    edited = export(bpy, tmp_path / "edited")
    assert edited != before
    _rename(bpy, armature, old, NEW)
    after = export(bpy, tmp_path / "after")
    assert_only_renamed(edited, after, {old: NEW})


def test_two_bones_that_swap_names_swap_them_in_the_export(blender, tmp_path):
    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    a, b = "left_leg_knee", "right_leg_knee"
    _rename(bpy, armature, a, "swapping")
    _rename(bpy, armature, b, a)
    _rename(bpy, armature, "swapping", b)
    after = export(bpy, tmp_path / "after")
    assert after != before
    assert_only_renamed(before, after, {a: b, b: a})


def test_a_rename_onto_another_bones_name_is_refused_and_leaves_nothing(blender, tmp_path):
    """Blender allows a name differing only in case; studiomdl does not tell them apart."""
    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER))
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    old, other = "left_leg_knee", "left_leg_hip"
    _rename(bpy, armature, old, other.upper())
    out = tmp_path / "out"
    out.mkdir()
    expected = f"bone '{old}' renamed in Blender to '{other.upper()}': the model has another bone '{other}'"
    with pytest.raises(RuntimeError, match=re.escape(expected)):
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"))
    assert list(tmp_path.iterdir()) == [out] and not list(out.iterdir())


def test_goldsrc_a_renamed_bone_exports_under_its_new_name(blender, tmp_path):
    """houndeye: a weighted bone with children renamed: every SMD (reference and sequences) and the QC are the
    unedited export's with the new name for the old."""
    bpy = blender
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    model = imported(bpy, path, animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    before = export(bpy, tmp_path / "before")
    old = _most_named(before[_qc(before)], armature)
    assert armature.data.bones[old].children
    assert re.search(rf'^\$(hbox|attachment|controller) .*"{old}"', before[_qc(before)].decode("latin-1"), re.M)
    _rename(bpy, armature, old, NEW)
    after = export(bpy, tmp_path / "after")
    assert_only_renamed(before, after, {old: NEW})
    assert sum(n.endswith(".smd") for n in after) > 2


def test_an_older_imports_rename_with_another_parent_is_a_deleted_bone_and_a_new_one(blender, tmp_path):
    """No stamp, and the renamed bone now under another parent: the rest alone does not make it the file's."""
    import smd_reader

    from io_ms3d_mdl.blender.armature import BONE_INDEX

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    for bone in armature.data.bones:
        del bone[BONE_INDEX]
    old = "left_leg_knee"
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    bones = armature.data.edit_bones
    bones[old].name = NEW
    bones[NEW].parent = bones["left_leg_hip"]
    bpy.ops.object.mode_set(mode="OBJECT")
    after = export(bpy, tmp_path / "after")
    reference = smd_reader.parse(after["monster_a_model.smd"], "monster_a_model.smd")
    assert old not in reference.names
    assert reference.names[-1] == NEW  # (a new bone: after the file's)
    assert reference.names[reference.parents[-1]] == "left_leg_hip"
