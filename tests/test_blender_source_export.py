"""File › Export › Source Model Sources (.qc), in the bpy wheel: an imported Source model as Blender holds it, back
to the decompiler's QC and SMD/VTA files, with everything Blender does not show taken from the original file."""

from __future__ import annotations

import difflib
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import ms3d_sample, sample_path
from test_archives import KNIFE

from io_ms3d_mdl.cli import main
from io_ms3d_mdl.decompile import DecompileOptions, decompile

pytestmark = pytest.mark.blender

METAL_BOX = "Igrium__portal_nrtx/models/props/metal_box.mdl"
DWARF = "akadjoker__H3DView/media/dwarf.ms3d"
UNEDITED = [
    METAL_BOX,
    "icewind1991__vmdl/data/barrel01.mdl",
    "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",
    "GoodFishMan__mercenaries/models/player/scout.mdl",
    "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl",
]


def imported(bpy, path: Path, **options):
    options.setdefault("units", "SOURCE")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), **options) == {"FINISHED"}
    model = next(c for c in bpy.data.collections if "source_version" in c)
    armature = next((o for o in model.all_objects if o.type == "ARMATURE"), None)
    bpy.context.view_layer.objects.active = armature or next(o for o in model.all_objects if o.type == "MESH")
    return model


def export(bpy, out: Path, **options) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    assert bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"), **options) == {"FINISHED"}
    return files(out)


def files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def decompiled(path: Path, out: Path) -> dict:
    decompile(str(path), str(out), DecompileOptions())
    return files(out)


def differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    out = [f"only in one: {sorted(set(a) ^ set(b))}"] if set(a) != set(b) else []
    for name in sorted(set(a) & set(b)):
        if a[name] != b[name]:
            lines = difflib.unified_diff(
                a[name].decode("latin-1").splitlines(), b[name].decode("latin-1").splitlines(), lineterm="", n=0
            )
            out.append(f"{name}: " + "\n".join(list(lines)[2:12]))
    return out


@pytest.mark.parametrize("relative", UNEDITED, ids=lambda r: Path(r).stem)
def test_an_unedited_model_exports_the_decompilers_bytes(blender, tmp_path, relative):
    path = sample_path("source", relative)
    imported(blender, path)
    ours = export(blender, tmp_path / "export")
    theirs = decompiled(path, tmp_path / "decompiled")
    # The decompiler itself is not stable in an animation's last digit from one run to the next (seen on
    # civilian's included animations, a different file each time): animation files are held to one float32 step.
    for name in {d.split(":")[0] for d in differences(ours, theirs)}:
        assert name.startswith("anims/"), differences(ours, theirs)
        assert same_numbers(ours[name], theirs[name]), name


def test_a_model_imported_into_anothers_collection_is_not_part_of_its_export(blender, tmp_path):
    """An import links its collection under the active one: civilian imported while metal_box's collection is
    active lands inside it. metal_box's export still has only its own meshes, skins and armature (the GUI tour
    found civilian's head written as metal_box's skin family 0)."""
    box = imported(blender, sample_path("source", METAL_BOX))
    own = blender.context.view_layer.objects.active
    layer = next(c for c in blender.context.view_layer.layer_collection.children if c.collection == box)
    blender.context.view_layer.active_layer_collection = layer
    assert blender.ops.import_scene.source_mdl(filepath=str(sample_path("source", UNEDITED[-1]))) == {"FINISHED"}
    civilian = next(c for c in blender.data.collections if c.get("source_version") and c != box)
    assert civilian.name in box.children, [c.name for c in box.children]  # (the import did nest it)
    blender.context.view_layer.objects.active = own
    ours = export(blender, tmp_path / "export")
    assert differences(ours, decompiled(sample_path("source", METAL_BOX), tmp_path / "decompiled")) == []
    from io_ms3d_mdl.blender.source_switch import set_skin

    theirs = {o.name: [s.material for s in o.material_slots] for o in civilian.all_objects}
    set_skin(box, 1)  # (the skin switch of the outer model leaves the inner one's slots alone)
    assert {o.name: [s.material for s in o.material_slots] for o in civilian.all_objects} == theirs
    assert own.material_slots[0].material.name == "metal_box_companion"


def test_a_milkshape_model_imported_into_its_collection_is_not_part_of_its_export(blender, tmp_path):
    """The same for a MilkShape model (the GUI tour's dwarf, with its own armature, imported while metal_box's
    collection is active): its armature is not taken for metal_box's, nor its meshes for metal_box's."""
    from io_ms3d_mdl.blender.source_switch import own_objects

    box = imported(blender, sample_path("source", METAL_BOX))
    own = blender.context.view_layer.objects.active
    layer = next(c for c in blender.context.view_layer.layer_collection.children if c.collection == box)
    blender.context.view_layer.active_layer_collection = layer
    assert blender.ops.import_scene.ms3d(filepath=str(ms3d_sample(DWARF))) == {"FINISHED"}
    dwarf = next(c for c in blender.data.collections if "ms3d_version" in c)
    assert dwarf.name in box.children and any(o.type == "ARMATURE" for o in dwarf.all_objects)
    assert set(own_objects(box)).isdisjoint(dwarf.all_objects)
    blender.context.view_layer.objects.active = own
    ours = export(blender, tmp_path / "export")
    assert differences(ours, decompiled(sample_path("source", METAL_BOX), tmp_path / "decompiled")) == []


def same_numbers(a: bytes, b: bytes) -> bool:
    ta, tb = a.split(), b.split()
    if len(ta) != len(tb):
        return False
    for x, y in zip(ta, tb, strict=True):
        if x != y and not np.isclose(np.float32(x), np.float32(y), rtol=3e-7, atol=1e-9):
            return False
    return True


@pytest.mark.skipif(not KNIFE.is_file(), reason="the shared VPK sample is not here")
def test_a_model_inside_a_vpk_exports_the_decompilers_bytes(blender, tmp_path):
    """The original file is read again through the archive the model was imported from."""
    inside = Path(KNIFE, "models", "v_models", "v_knife_t.mdl")
    imported(blender, inside)
    ours = export(blender, tmp_path / "export")
    theirs = decompiled(inside, tmp_path / "decompiled")
    assert ours and differences(ours, theirs) == []


@pytest.mark.parametrize(
    "options",
    [{"units": "INCHES"}, {"units": "HAMMER", "axis_forward": "-X"}, {"units": "SOURCE", "axis_up": "-Y"}],
    ids=["inches", "hammer-forward-X", "source-up-Y"],
)
@pytest.mark.parametrize("relative", [METAL_BOX, UNEDITED[2], UNEDITED[3]], ids=lambda r: Path(r).stem)
def test_the_imports_scale_and_axes_are_undone_exactly(blender, tmp_path, relative, options):
    """Blender holds float32 after the scale and turn: every value within that precision of the file's is the
    file's, so the other scales and axes export the same bytes too. The one difference measured: at Hammer's scale
    (0.01905) Blender loses monster_cube's custom normal on one corner of a sliver triangle of head01 (it gives
    (0, 0, 1)); that corner is written with Blender's normal, everything else on the line equal."""
    path = sample_path("source", relative)
    imported(blender, path, **options)
    ours = export(blender, tmp_path / "export")
    theirs = decompiled(path, tmp_path / "decompiled")
    lost = 0
    for name in {d.split(":")[0] for d in differences(ours, theirs)}:
        assert name.endswith(".smd"), differences(ours, theirs)
        a, b = ours[name].splitlines(), theirs[name].splitlines()
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            if x != y:
                x, y = x.split(), y.split()
                assert x[:4] == y[:4] and x[7:] == y[7:], (name, x, y)  # bone, position, UV, weights equal
                lost += 1
    assert lost <= (1 if "HAMMER" in options.values() and "monster" in relative else 0)


MONSTER = "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"


def edit_monster(bpy, model):
    """The issue's edits, made as a user would: vertices moved, a material renamed, a body-part option added (a new
    object in a new option collection, weighted to the rig). Returns the objects each exported SMD should hold."""
    import bst_oracle  # noqa: F401 - (the harness needs the oracle; imported here for its skip)

    body = next(o for o in model.all_objects if o.name == "monster_a_model")
    co = np.empty(len(body.data.vertices) * 3, np.float32)
    body.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:200] += (1.5, -2.0, 3.25)
    body.data.vertices.foreach_set("co", co.ravel())
    body.data.update()
    renamed = body.material_slots[0].material
    old_name = renamed.name
    renamed.name = "monster_renamed"

    head = next(o for o in model.all_objects if o.name == "monster_a_monstera_head01")
    part = next(c for c in model.children if c.get("source_bodypart") == 1)
    option = bpy.data.collections.new("heads: new head")
    part.children.link(option)
    new = head.copy()
    new.data = head.data.copy()
    new.name = "new_head"
    new.location = (0.0, 0.0, 0.0)
    co = np.empty(len(new.data.vertices) * 3, np.float32)
    new.data.vertices.foreach_get("co", co)
    new.data.vertices.foreach_set("co", (co.reshape(-1, 3) * 1.25 + (0.0, 0.0, 4.0)).ravel())
    option.objects.link(new)
    return {"monster_a_model": [body], "new_head": [new]}, old_name, str(renamed["source_texture"])


def test_an_edited_model_is_read_back_by_blender_source_tools_as_edited(blender, tmp_path):
    import bst_oracle

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    path = sample_path("source", MONSTER)
    model = imported(bpy, path)
    before = export(bpy, tmp_path / "before")
    expected, old_name, texture = edit_monster(bpy, model)
    after = export(bpy, tmp_path / "after")

    # what the edited scene holds, as the SMDs should name it (an imported material: the file's texture name)
    def export_name(name: str) -> str:
        mat = bpy.data.materials[name]
        return name if name == "monster_renamed" else str(mat.get("source_texture", name))

    ours = {}
    for stem, objects in expected.items():
        tris = bst_oracle.triangles(objects)
        tris.materials = [export_name(m) for m in tris.materials]
        ours[stem] = tris
    size = 100.0
    for obj in list(model.all_objects):  # our objects out of the way: Blender Source Tools' keep their files' names
        bpy.data.objects.remove(obj)
    theirs = bst_oracle.import_qc(tmp_path / "after" / "monster_cube.qc")
    for stem, tris in ours.items():
        assert stem in theirs.meshes, sorted(theirs.meshes)
        bst_oracle.compare_meshes(tris, bst_oracle.triangles([theirs.meshes[stem]]), size)

    # the QC: only what was edited changed
    a = before["monster_cube.qc"].decode().splitlines()
    b = after["monster_cube.qc"].decode().splitlines()
    changed = [line for line in difflib.unified_diff(a, b, lineterm="", n=0) if line[:1] in "+-"][2:]
    renamed_lines = [line for line in changed if old_name in line or "monster_renamed" in line]
    added = [line for line in changed if line not in renamed_lines]
    assert added == ['+\tstudio "new_head.smd"'], changed
    assert all(line.replace(old_name, "monster_renamed")[1:] in {x[1:] for x in changed} for line in renamed_lines)
    # every other file the same bytes, but for the renamed material's name where it is used
    changed_files = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    assert {"monster_a_model.smd", "monster_cube.qc", "new_head.smd"} <= set(changed_files)
    for name in set(changed_files) - {"monster_a_model.smd", "monster_cube.qc", "new_head.smd"}:
        assert after[name].replace(b"monster_renamed", texture.encode()) == before[name], name


def test_a_new_action_exports_as_a_sequence_the_strict_reader_reads_as_blender_poses_it(blender, tmp_path):
    """Read back by the strict SMD reader (tests/smd_reader.py): every frame's bones, composed to model space, are
    Blender's own evaluated pose (frame_set), up to the one constant turn studiomdl gives root bones."""
    import smd_reader

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    expected = _wave(bpy, armature, in_world=True)
    out = export(bpy, tmp_path / "out")
    qc = out["monster_cube.qc"].decode()
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base  # the scene's rate (the import set it)
    assert f'$sequence "wave" "anims/wave.smd"\n{{\n\tfps {fps:g}\n}}' in qc.replace("\r\n", "\n")
    smd = smd_reader.read(tmp_path / "out" / "anims" / "wave.smd")
    assert sorted(smd.frames) == list(range(11))
    assert_posed_as(smd, expected)


def _wave(bpy, armature, in_world: bool) -> list[dict[str, np.ndarray]]:
    """A new action "wave" keying three bones' rotations and one's location over frames 0-10; Blender's evaluated
    pose of every bone at each frame, in world space or the armature's."""
    from mathutils import Matrix, Quaternion

    armature.animation_data_create().action = bpy.data.actions.new("wave")
    picked = [pb for pb in armature.pose.bones if pb.parent is not None][:3]
    for f in range(11):
        for k, pb in enumerate(picked):
            pb.rotation_mode = "QUATERNION"
            pb.rotation_quaternion = Quaternion((1.0, 0.5, 0.2 * k), 0.07 * f * (k + 1))
            pb.keyframe_insert("rotation_quaternion", frame=f)
        picked[0].location = (0.1 * f, -0.05 * f, 0.2 * f)
        picked[0].keyframe_insert("location", frame=f)
    expected = []
    for f in range(11):
        bpy.context.scene.frame_set(f)
        world = armature.matrix_world if in_world else Matrix.Identity(4)
        expected.append({pb.name: np.array(world @ pb.matrix) for pb in armature.pose.bones})
    return expected


@pytest.mark.parametrize(
    "placed",
    [((10.0, -3.0, 2.0), (0.3, 0.0, 0.5), (1.3, 0.6, 1.0)), ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (-2.0, 2.0, 2.0))],
    ids=["moved-turned-scaled-unevenly", "mirrored-and-scaled"],
)
def test_a_new_action_on_an_armature_placed_after_the_import_exports_the_armatures_poses(blender, tmp_path, placed):
    """The armature object moved, turned or scaled after the import: the SMD holds Blender's poses in the armature's
    space (the file's bind pose is, too). Found: the pose was taken as a change in world space (and location keys in
    world units), so a keyed bone turned about where its object had moved it: up to 10.3 units off for an armature
    moved 10 units, 8.0 for one scaled by 2."""
    import smd_reader

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    armature.location, armature.rotation_euler, armature.scale = placed
    expected = _wave(bpy, armature, in_world=False)
    export(bpy, tmp_path / "out")
    assert_posed_as(smd_reader.read(tmp_path / "out" / "anims" / "wave.smd"), expected)


def test_a_new_action_on_an_armature_scaled_to_zero_is_refused_naming_it(blender, tmp_path):
    """Found: an armature scaled to 0 on an axis (its meshes unparented, so their own check of the scale passes) has
    no bone rest with an inverse: the export stopped with numpy's 'LinAlgError: Singular matrix', then (the batched
    inverse) wrote the action's SMD as zeros with only a warning."""
    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    for obj in [o for o in model.all_objects if o.parent is armature]:
        kept = obj.matrix_world.copy()
        obj.parent = None
        obj.matrix_world = kept
    armature.scale = (1.0, 0.0, 1.0)
    armature.animation_data_create().action = bpy.data.actions.new("wave")
    bone = next(pb for pb in armature.pose.bones if pb.parent is not None)
    bone.rotation_mode = "QUATERNION"
    for frame in (0, 10):
        bone.rotation_quaternion = (1.0, 0.1 * frame, 0.0, 0.0)
        bone.keyframe_insert("rotation_quaternion", frame=frame)
    out = tmp_path / "out"
    out.mkdir()
    with pytest.raises(RuntimeError, match=rf"armature '{re.escape(armature.name)}': .*a scale of 0"):
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"))
    assert not list(out.iterdir())


@pytest.mark.parametrize("where", ["above-the-root", "under-a-leaf", "between-a-bone-and-its-parent"])
def test_a_bone_made_in_blender_and_keyed_exports_as_blender_poses_it(blender, tmp_path, where):
    """A bone made in edit mode (the rigging habit: a "master" bone made the parent of the file's root; or one under a
    leaf; or one put between a bone and its parent), then a new action keying it, the root and two more bones
    (rotation and location): the action's SMD holds Blender's evaluated pose of every bone, and the reference SMD's
    bind pose is Blender's rest. Every bone is set to rest first: the export writes keys only, so a pose value left
    unkeyed (once seen on the root: ~34 units, laid on the new bone when the turn is taken from the root) is not it."""
    import smd_reader
    from mathutils import Quaternion

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    root = next(b.name for b in armature.data.bones if b.parent is None)
    leaf = next(b.name for b in armature.data.bones if b.parent is not None and not b.children)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    bones = armature.data.edit_bones
    master = bones.new("master")
    master.head, master.tail = (3.0, -4.0, -10.0), (3.5, -3.0, 0.0)
    if where == "above-the-root":
        bones[root].parent = master
    elif where == "under-a-leaf":
        master.parent = bones[leaf]
    else:
        master.parent = bones[leaf].parent
        bones[leaf].parent = master
    bpy.ops.object.mode_set(mode="OBJECT")
    for pb in armature.pose.bones:
        pb.rotation_mode = "QUATERNION"
        pb.rotation_quaternion, pb.location, pb.scale = (1.0, 0.0, 0.0, 0.0), (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    armature.animation_data_create().action = bpy.data.actions.new("wave")
    others = [pb for pb in armature.pose.bones if pb.name not in ("master", root) and pb.parent is not None][:2]
    keyed = [armature.pose.bones["master"], armature.pose.bones[root], *others]
    for f in range(11):
        for k, pb in enumerate(keyed):
            pb.rotation_quaternion = Quaternion((1.0, 0.5, 0.2 * k), 0.07 * f * (k + 1))
            pb.location = (0.3 * f, -0.2 * f * k, 0.5 * f)
            pb.keyframe_insert("rotation_quaternion", frame=f)
            pb.keyframe_insert("location", frame=f)
    expected = []
    for f in range(11):
        bpy.context.scene.frame_set(f)
        expected.append({pb.name: np.array(pb.matrix) for pb in armature.pose.bones})
    rest = {b.name: np.array(b.matrix_local) for b in armature.data.bones}
    out = export(bpy, tmp_path / "out")
    smd = smd_reader.read(tmp_path / "out" / "anims" / "wave.smd")
    assert "master" in smd.names and sorted(smd.frames) == list(range(11))
    assert_posed_as(smd, expected)
    reference = next(n for n in out if not n.startswith("anims/") and n.endswith(".smd") and b"triangles" in out[n])
    assert_posed_as(smd_reader.parse(out[reference], reference), [rest])


def assert_posed_as(smd, expected: list[dict[str, np.ndarray]]) -> None:
    """Every frame of ``smd``, its bones composed to model space, is ``expected``'s (Blender's evaluated pose per
    frame, by bone name), up to the one constant turn studiomdl gives root bones."""
    from io_ms3d_mdl.scene.rotations import compose, euler_xyz_to_matrix

    turn = None
    for f, wanted in enumerate(expected):
        pose = smd.pose(f)
        local = compose(euler_xyz_to_matrix(pose[:, 3:]), pose[:, :3])
        world = local.copy()
        for i, p in enumerate(smd.parents.tolist()):
            if p >= 0:
                world[i] = world[p] @ local[i]
        for i, name in enumerate(smd.names):
            ours = wanted[name]
            if turn is None:  # studiomdl's root turn, undone in the SMD: one constant rotation
                turn = world[i] @ np.linalg.inv(ours)
                assert np.allclose(turn[:3, :3] @ turn[:3, :3].T, np.eye(3), atol=1e-4)
                assert np.allclose(turn[:3, 3], 0, atol=1e-2)
            # Blender's head/tail/roll rest bones are ~5e-4 rad off the file's frames (bst_oracle.REST_TURN), which
            # over the monster's 40 units is up to ~1e-2 in place
            expect = turn @ ours
            assert np.allclose(world[i][:3, :3], expect[:3, :3], atol=2e-3), (f, name)
            assert np.allclose(world[i][:3, 3], expect[:3, 3], atol=2e-2), (f, name)


def test_an_edited_imported_action_exports_blenders_frames_keeping_the_files_for_untouched_bones(blender, tmp_path):
    """An imported animation whose keys the user changed is written from Blender, under its own name and in its
    own $sequence (events, activity, fps from the file): the strict reader reads Blender's poses, and every bone the
    user did not touch keeps the decompiler's exact lines; the other animations and the QC keep their bytes."""
    import smd_reader

    bpy = blender
    path = sample_path("source", MONSTER)
    before = decompiled(path, tmp_path / "decompiled")
    model = imported(bpy, path, bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    actions = [a for a in bpy.data.actions if "source_animation" in a]
    action = max(actions, key=lambda a: int(a["source_frames"]))  # the longest
    name, count = str(action["source_animation"]), int(action["source_frames"])
    assert count > 2
    moved, expected = _edit_bone_keys(bpy, armature, action)

    after = export(bpy, tmp_path / "out")
    changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n))
    smd_name = next(n for n in before if n.startswith("anims/") and Path(n).stem == name.lstrip("@"))
    assert changed == [smd_name]  # the QC too is the decompiler's: same file, same frame count, same sequence
    smd = smd_reader.read(tmp_path / "out" / smd_name)
    assert sorted(smd.frames) == list(range(count))
    assert_posed_as(smd, expected)
    file_name = moved.bone.get("source_name", moved.name)
    bone = smd.names.index(file_name)
    lines = {"before": before[smd_name].decode().splitlines(), "after": after[smd_name].decode().splitlines()}
    assert len(lines["before"]) == len(lines["after"])
    differ = {b for b, a in zip(lines["before"], lines["after"], strict=True) if a != b}
    assert differ and all(line.split()[0] == str(bone) for line in differ)  # only the moved bone's lines


@pytest.mark.parametrize(
    ("relative", "build"), [(MONSTER, "OWN"), ("Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl", "ALL")]
)
def test_only_the_action_whose_keys_changed_counts_as_edited(blender, tmp_path, relative, build):
    """The import's fingerprint of each action's keys: every action as imported reads back unchanged (made anew or
    copied from a shared template, included models' too); one key moved, and that action alone is changed."""
    from io_ms3d_mdl.blender.source_export import gather

    bpy = blender
    model = imported(bpy, sample_path("source", relative), animations=build)
    made = [a for a in bpy.data.actions if "source_animation" in a]
    assert len(made) > 1
    edits = gather(bpy.context, model)
    assert edits.edited == {} and edits.notes == []
    action = made[1]
    fcurve = next(c for c in _curves(action) if c.data_path.endswith("rotation_quaternion"))
    fcurve.keyframe_points[0].co[1] += 0.25
    edits = gather(bpy.context, model)
    if action.get("source_include") or action.get("source_delta"):
        assert edits.edited == {} and len(edits.notes) == 1 and action.name in edits.notes[0]
    else:
        assert list(edits.edited) == [action["source_animation"]] and edits.notes == []


def test_actions_as_imported_are_read_without_their_channels_unless_asked(blender):
    """A Source export writes an action left as imported from the file, so reading it skips the conversion of its
    keys (``unchanged_channels=False``): such actions come back with no channels, the same ``keys_changed`` and
    range, and an edited one with the channels a full read gives it."""
    from io_ms3d_mdl.blender.scene_reader import ReadOptions, read_objects

    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER), animations="ALL")
    meshes = [o for o in model.all_objects if o.type == "MESH"]
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    made = [a for a in bpy.data.actions if "source_animation" in a]
    fcurve = next(c for c in _curves(made[1]) if c.data_path.endswith("rotation_quaternion"))
    fcurve.keyframe_points[0].co[1] += 0.25

    def read(unchanged_channels: bool) -> dict:
        options = ReadOptions(animation="ALL", unchanged_channels=unchanged_channels)
        return {a.name: a for a in read_objects(bpy.context, meshes, armature, options).actions}

    full, lean = read(True), read(False)
    assert sorted(full) == sorted(lean) and len(full) == len(made)
    for name, action in full.items():
        other = lean[name]
        assert (other.keys_changed, other.frame_range) == (action.keys_changed, action.frame_range)
        if action.keys_changed:
            assert name == made[1].name and len(other.channels) == len(action.channels) > 0
            for a, b in zip(action.channels, other.channels, strict=True):
                np.testing.assert_array_equal(a.rotations, b.rotations)
                np.testing.assert_array_equal(a.location_frames, b.location_frames)
        else:
            assert other.channels == [] and action.channels


def _curves(action):
    if hasattr(action, "layers"):
        return [
            c for layer in action.layers for strip in layer.strips for bag in strip.channelbags for c in bag.fcurves
        ]
    return list(action.fcurves)


def _edit_bone_keys(bpy, armature, action) -> tuple[object, list[dict[str, np.ndarray]]]:
    """Turn one bone (not a root) of ``action`` on each of the file's frames, keyed there; Blender's poses then."""
    from mathutils import Quaternion

    from io_ms3d_mdl.blender.action_keys import stored_step

    count, step = int(action["source_frames"]), stored_step(action)
    for track in armature.animation_data.nla_tracks:  # the action alone poses the armature
        track.mute = True
    armature.animation_data.action = action
    if hasattr(armature.animation_data, "action_slot") and armature.animation_data.action_slot is None:
        armature.animation_data.action_slot = action.slots[0]
    moved = next(pb for pb in armature.pose.bones if pb.parent is not None)
    scene = bpy.context.scene
    for k in range(count):
        scene.frame_set(round(k * step))
        moved.rotation_mode = "QUATERNION"
        moved.rotation_quaternion = moved.rotation_quaternion @ Quaternion((0.0, 1.0, 0.0), 0.3 + 0.01 * k)
        moved.keyframe_insert("rotation_quaternion", frame=k * step)
    return moved, _poses(bpy, armature, [k * step for k in range(count)])


def _poses(bpy, armature, frames) -> list[dict[str, np.ndarray]]:
    out = []
    for f in frames:
        bpy.context.scene.frame_set(round(f))
        out.append({pb.name: np.array(armature.matrix_world @ pb.matrix) for pb in armature.pose.bones})
    return out


def test_an_edited_and_a_new_action_are_read_back_by_blender_source_tools_as_blender_poses_them(blender, tmp_path):
    """monster_cube: an imported animation changed and an action made in Blender; Blender Source Tools imports the
    exported QC, and both of its animations pose every bone as ours do, frame by frame (up to studiomdl's root
    turn, which the SMDs undo), within the read-back's tolerances."""
    import bst_oracle
    from mathutils import Quaternion
    from test_decompile_readback import unturned

    from io_ms3d_mdl.blender.action_keys import stored_step

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    action = max((a for a in bpy.data.actions if "source_animation" in a), key=lambda a: int(a["source_frames"]))
    moved, expected = _edit_bone_keys(bpy, armature, action)
    step = stored_step(action)
    stem = str(action["source_animation"]).lstrip("@")  # (the SMD's name: the decompiler drops a leading @)
    ours = {stem: bst_oracle.pose_matrices(armature, [k * step for k in range(len(expected))])}
    wave = bpy.data.actions.new("wave")
    armature.animation_data.action = wave
    for pb in armature.pose.bones:
        pb.matrix_basis.identity()
    for f in range(6):
        moved.rotation_quaternion = Quaternion((1.0, 0.0, 0.3), 0.1 * f)
        moved.keyframe_insert("rotation_quaternion", frame=f)
    ours["wave"] = bst_oracle.pose_matrices(armature, list(range(6)))
    export(bpy, tmp_path / "out")
    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    for made in list(bpy.data.actions):  # (before slots, Blender Source Tools names an action after its SMD)
        bpy.data.actions.remove(made)
    theirs = bst_oracle.import_qc(tmp_path / "out" / "monster_cube.qc")
    for stem, poses in ours.items():
        theirs.animations[stem]()
        frames = bst_oracle.bst_frames(theirs.armature)
        assert len(frames) == len(next(iter(poses.values()))), stem
        their_poses = bst_oracle.pose_matrices(theirs.armature, frames)
        bst_oracle.compare_poses(unturned(poses, their_poses), their_poses, 100.0, stem)


def _houndeye_in_place(bpy, path: Path):
    """houndeye imported with its own sequences: the collection, the armature, and its longest sequence that does
    not move the entity (no linear or rotational motion flag), to edit."""
    model = imported(bpy, path, bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    in_place = [
        a
        for a in bpy.data.actions
        if "source_sequence" in a and not int(a["source_motion_type"]) & 0x1C7 and int(a["source_frames"]) > 2
    ]
    return model, armature, max(in_place, key=lambda a: int(a["source_frames"]))


def test_goldsrc_an_edited_sequence_and_a_new_action_export_as_blender_poses_them(blender, tmp_path):
    """houndeye: one imported sequence changed (written from Blender in its own $sequence line, the bones not
    touched keeping the decompiler's lines) and a new action (its own SMD, a $sequence with rotate -90: the
    frames are the engine's pose); nothing else changes."""
    import smd_reader
    from mathutils import Quaternion

    bpy = blender
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    before = decompiled(path, tmp_path / "decompiled")
    _, armature, action = _houndeye_in_place(bpy, path)
    moved, expected = _edit_bone_keys(bpy, armature, action)
    wave = bpy.data.actions.new("wave")
    armature.animation_data.action = wave
    for pb in armature.pose.bones:  # the bones it does not key: at rest (as the export writes them)
        pb.matrix_basis.identity()
    for f in range(6):
        moved.rotation_quaternion = Quaternion((1.0, 0.0, 0.3), 0.1 * f)
        moved.keyframe_insert("rotation_quaternion", frame=f)
    waved = _poses(bpy, armature, range(6))

    after = export(bpy, tmp_path / "out")
    edited = f"{action['source_animation']}.smd"
    qc = next(n for n in before if n.endswith(".qc"))
    assert sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n)) == sorted(
        [edited, qc, "wave.smd"]
    )
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    assert after[qc].decode() == before[qc].decode() + f'$sequence "wave" "wave" rotate -90 fps {fps:g}\n'
    smd = smd_reader.read(tmp_path / "out" / edited)
    assert sorted(smd.frames) == list(range(len(expected)))
    assert_posed_as(smd, expected)
    bone = smd.names.index(moved.bone.get("source_name", moved.name))
    lines = before[edited].decode().splitlines(), after[edited].decode().splitlines()
    differ = {b for b, a in zip(*lines, strict=True) if a != b}
    assert differ and all(line.split()[0] == str(bone) for line in differ)
    assert_posed_as(smd_reader.read(tmp_path / "out" / "wave.smd"), waved)


def test_goldsrc_an_edited_sequence_is_read_back_by_blender_source_tools_as_blender_poses_it(blender, tmp_path):
    """houndeye: an imported sequence changed in Blender (one bone turned on every frame); Blender Source Tools
    imports the exported QC, and that sequence poses every bone as ours does, frame by frame (up to studiomdl's
    root turn, which the SMDs undo)."""
    import bst_oracle
    from test_decompile_readback import unturned

    from io_ms3d_mdl.blender.action_keys import stored_step

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    model, armature, action = _houndeye_in_place(bpy, next(p for p in goldsrc_models() if p.stem == "houndeye"))
    step, count = stored_step(action), int(action["source_frames"])
    for track in armature.animation_data.nla_tracks:  # the action alone poses the armature
        track.mute = True
    armature.animation_data.action = action
    if hasattr(armature.animation_data, "action_slot") and armature.animation_data.action_slot is None:
        armature.animation_data.action_slot = action.slots[0]
    unedited = bst_oracle.pose_matrices(armature, [k * step for k in range(count)])
    _, expected = _edit_bone_keys(bpy, armature, action)
    stem = str(action["source_animation"]).lstrip("@")
    ours = bst_oracle.pose_matrices(armature, [k * step for k in range(len(expected))])
    written = export(bpy, tmp_path / "out")
    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    for made in list(bpy.data.actions):  # (before slots, Blender Source Tools names an action after its SMD)
        bpy.data.actions.remove(made)
    theirs = bst_oracle.import_qc(tmp_path / "out" / next(n for n in written if n.endswith(".qc")))
    theirs.animations[stem]()
    frames = bst_oracle.bst_frames(theirs.armature)
    assert len(frames) == len(expected)
    their_poses = bst_oracle.pose_matrices(theirs.armature, frames)
    bst_oracle.compare_poses(unturned(ours, their_poses), their_poses, 100.0, stem)
    with pytest.raises(AssertionError):  # the edit is there: the sequence as imported is not what it reads
        bst_oracle.compare_poses(unturned(unedited, their_poses), their_poses, 100.0, stem)


def test_the_operator_is_in_file_export_and_only_for_an_imported_source_model(blender, tmp_path):
    bpy = blender
    from io_ms3d_mdl.blender import source_export

    assert source_export.menu_export in bpy.types.TOPBAR_MT_file_export._dyn_ui_initialize()
    assert bpy.ops.export_scene.source_qc.poll() is False  # nothing imported
    bpy.ops.mesh.primitive_cube_add()
    assert bpy.ops.export_scene.source_qc.poll() is False  # a mesh of no imported model
    with pytest.raises(RuntimeError, match="not part of an imported Source or GoldSrc model"):
        bpy.ops.export_scene.source_qc(filepath=str(tmp_path / "x.qc"))
    ms3d = tmp_path / "metal_box.ms3d"  # a Source model made MilkShape: no original file to take the rest from
    assert main(["convert", str(sample_path("source", METAL_BOX)), "-o", str(ms3d)]) == 0
    before = set(bpy.data.collections)
    assert bpy.ops.import_scene.ms3d(filepath=str(ms3d)) == {"FINISHED"}
    bpy.context.view_layer.objects.active = next(c for c in bpy.data.collections if c not in before).all_objects[0]
    assert bpy.ops.export_scene.source_qc.poll() is False
    imported(bpy, sample_path("source", METAL_BOX))
    assert bpy.ops.export_scene.source_qc.poll() is True


def goldsrc_models() -> list[Path]:
    from conftest import sample_files

    return [
        p for p in sample_files("goldsrc", "*.mdl") if not p.stem.lower().endswith("t") and not p.stem[-2:].isdigit()
    ]


@pytest.mark.parametrize("units", ["SOURCE", "INCHES"])
def test_an_unedited_goldsrc_model_exports_the_decompilers_bytes(blender, tmp_path, units):
    """GoldSrc too: texels, one bone per vertex and the file's positions come back exactly."""
    bpy = blender
    assert len(goldsrc_models()) >= 7
    for k, path in enumerate(goldsrc_models()):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        model = imported(bpy, path, units=units)
        assert bpy.ops.export_scene.source_qc.poll() is True
        ours = export(bpy, tmp_path / f"export{k}")
        theirs = decompiled(path, tmp_path / f"decompiled{k}")
        assert differences(ours, theirs) == [], path.name
        assert model.name


def test_an_edited_goldsrc_model_is_read_back_by_blender_source_tools_as_edited(blender, tmp_path):
    """houndeye: vertices moved and a new option; UVs compared within half a texel (GoldSrc stores texels)."""
    import bst_oracle
    from test_decompile_readback import half_texel  # half a texel of the smallest texture written

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    model = imported(bpy, path)
    body = next(o for o in model.all_objects if o.type == "MESH")
    co = np.empty(len(body.data.vertices) * 3, np.float32)
    body.data.vertices.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:40] += (2.0, 0.0, -1.0)
    body.data.vertices.foreach_set("co", co.ravel())
    part = next(c for c in model.children if "source_bodypart" in c)
    option = bpy.data.collections.new("body: extra")
    part.children.link(option)
    extra = body.copy()
    extra.data = body.data.copy()
    extra.name = "extra_body"
    option.objects.link(extra)
    export(bpy, tmp_path / "out")
    stem = Path(body.get("source_model", body.name)).stem

    def export_name(name: str) -> str:
        return str(bpy.data.materials[name].get("source_texture", name))

    ours = {}
    for key, obj in ((stem, body), ("extra_body", extra)):
        tris = bst_oracle.triangles([obj])
        tris.materials = [export_name(m).lower().removesuffix(".bmp") for m in tris.materials]
        ours[key] = tris
    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    qc = next((tmp_path / "out").glob("*.qc"))
    theirs = bst_oracle.import_qc(qc)
    for key, tris in ours.items():
        assert key in theirs.meshes, sorted(theirs.meshes)
        got = bst_oracle.triangles([theirs.meshes[key]])
        got.materials = [m.lower().removesuffix(".bmp") for m in got.materials]
        # the SMD holds (texel + ¾ falling to ¼) / (size - 1) (the decompiler's, byte-equal above), the import
        # texel / size: at the last texel 1.25 / (size - 1) apart, for the smallest texture
        smallest = 0.5 / (half_texel(tmp_path / "out") - 1e-4)
        bst_oracle.compare_meshes(tris, got, 100.0, uv_tolerance=1.25 / (smallest - 1.0) + 1e-4)


@pytest.mark.parametrize("fault", ["empty slot", "existing file"])
def test_a_failed_export_names_the_object_and_leaves_nothing(blender, tmp_path, fault):
    bpy = blender
    model = imported(bpy, sample_path("source", MONSTER))
    body = next(o for o in model.all_objects if o.name == "monster_a_model")
    out = tmp_path / "out"
    out.mkdir()
    if fault == "empty slot":
        body.material_slots[0].material = None
        expected = "'monster_a_model': material slot 1 is empty"
    else:
        (out / "monster_cube.qc").write_bytes(b"mine")
        expected = "monster_cube.qc' exists"
    before = {p.name for p in tmp_path.iterdir()}
    inside = {p.name for p in out.iterdir()}
    bpy.context.view_layer.objects.active = body
    with pytest.raises(RuntimeError, match=expected.replace("(", r"\(").replace(")", r"\)")):
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"))
    assert {p.name for p in tmp_path.iterdir()} == before  # no staging folder left beside
    assert {p.name for p in out.iterdir()} == inside  # nothing written into the target
    if fault == "existing file":
        assert (out / "monster_cube.qc").read_bytes() == b"mine"
        assert bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"), overwrite=True) == {"FINISHED"}
        assert (out / "monster_cube.qc").read_bytes().startswith(b"// Decompiled by io_ms3d_mdl")


def _add_bone(bpy, armature, body, name: str, parent: str, vertices: list[int]) -> None:
    """A bone made in Blender under ``parent``, ``vertices`` of ``body`` weighted to it alone."""
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    bone = armature.data.edit_bones.new(name)
    bone.head, bone.tail = (1.0, 2.0, 3.0), (2.0, 3.5, 5.0)  # (not along an axis: roll is ill-conditioned there)
    bone.parent = armature.data.edit_bones[parent]
    bpy.ops.object.mode_set(mode="OBJECT")
    for group in body.vertex_groups:
        group.remove(vertices)
    body.vertex_groups.new(name=name).add(vertices, 1.0, "REPLACE")


@pytest.mark.parametrize("engine", ["source", "goldsrc"])
def test_a_moved_bone_and_a_new_bone_are_in_the_skeleton_blender_source_tools_reads(blender, tmp_path, engine):
    """monster_cube and houndeye: a bone's rest moved in edit mode and a new bone (three vertices weighted to it):
    Blender Source Tools, reading the QC, builds every bone at Blender's rest; the reference SMD weights those
    vertices to the new bone; every animation of the file holds it at its rest; the unmoved bones keep the
    decompiler's lines."""
    import bst_oracle
    import qc_grammar
    import smd_reader
    from mathutils import Vector

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    path = (
        sample_path("source", MONSTER)
        if engine == "source"
        else next(p for p in goldsrc_models() if p.stem == "houndeye")
    )
    model = imported(bpy, path, bone_orientation="SOURCE", animations="NONE")
    before = export(bpy, tmp_path / "before")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    body = next(o for o in model.all_objects if o.type == "MESH" and o.name.startswith(("monster_a_model", "houndeye")))
    leaf = next(b for b in armature.data.bones if b.parent is not None and not b.children)
    leaf, file_name = leaf.name, leaf.get("source_name", leaf.name)  # (a bone reference dies in edit mode)
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    edit = armature.data.edit_bones[leaf]
    edit.head, edit.tail = edit.head + Vector((0.0, 0.0, 2.0)), edit.tail + Vector((0.0, 0.0, 2.0))
    bpy.ops.object.mode_set(mode="OBJECT")
    _add_bone(bpy, armature, body, "tail", leaf, [0, 1, 2])
    ours_rest = bst_oracle.rest_matrices(armature)
    co = np.array([tuple(body.matrix_world @ body.data.vertices[i].co) for i in range(3)])
    after = export(bpy, tmp_path / "after")
    qc = next(n for n in after if n.endswith(".qc"))
    qc_grammar.check_file(tmp_path / "after" / qc)

    smd = next(n for n in after if not n.startswith("anims/") and n.endswith(".smd") and b"triangles" in after[n])
    reference = smd_reader.parse(after[smd], smd)
    tail = len(reference.names) - 1
    assert reference.names[tail] == "tail" and reference.names[reference.parents[tail]] == file_name
    # the corners at the three vertices (the SMD is in the file's units and axes: matched by distance alone)
    scale, turn = float(model["source_import_scale"]), axis_turn(model)
    at = (co @ turn) / scale
    corners = reference.vertices[:, :3]
    for point in at:  # (a position may hold other vertices too: seams)
        near = np.flatnonzero(np.linalg.norm(corners - point, axis=1) < 1e-3).tolist()
        assert any(reference.weights[k] == [(tail, 1.0)] for k in near), point
    old = before[smd].decode("latin-1").splitlines()
    new = after[smd].decode("latin-1").splitlines()
    moved = str(reference.names.index(file_name))
    rest_lines = lambda lines: lines[lines.index("time 0") + 1 : lines.index("end", lines.index("time 0"))]  # noqa: E731
    kept = [line for line in rest_lines(new) if line.split()[0] not in (moved, str(tail))]
    assert kept == [line for line in rest_lines(old) if line.split()[0] != moved]
    for name in (n for n in after if n.endswith(".smd") and n != smd and b"triangles" not in after[n]):
        anim = smd_reader.parse(after[name], name)
        assert anim.names == reference.names and all(len(anim.pose(t)) == len(anim.names) for t in anim.frames)

    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    theirs = bst_oracle.import_qc(tmp_path / "after" / qc)
    bst_oracle.compare_rest(ours_rest, bst_oracle.rest_matrices(theirs.armature), 100.0)


def axis_turn(model) -> np.ndarray:
    """The import's axes: world = source @ turn.T ... as a matrix taking world rows back to Source rows."""
    from io_ms3d_mdl.scene.axes import axis_conversion_matrix

    axes = model["source_import_axes"]
    return axis_conversion_matrix(str(axes[0]), str(axes[1]))


def _moved_key(key, count: int, offset: tuple[float, float, float]) -> np.ndarray:
    """The shape key's first ``count`` points moved by ``offset``; its points after."""
    co = np.empty(len(key.data) * 3, np.float32)
    key.data.foreach_get("co", co)
    co = co.reshape(-1, 3)
    co[:count] += offset
    key.data.foreach_set("co", co.ravel())
    return co


def test_an_edited_shape_key_is_in_the_vta(blender, tmp_path):
    """scout's flexes: one shape key's vertices moved in Blender; the strict reader finds them moved in the VTA's
    frame of that flex, every other frame and the QC as the unedited export has them."""
    import smd_reader

    bpy = blender
    model = imported(bpy, sample_path("source", UNEDITED[3]))
    before = export(bpy, tmp_path / "before")
    body = next(o for o in model.all_objects if o.type == "MESH" and o.data.shape_keys is not None)
    co = _moved_key(body.data.shape_keys.key_blocks[1], 50, (0.0, 0.0, 2.5))
    after = export(bpy, tmp_path / "after")
    vta = next(n for n in after if n.endswith(".vta"))
    assert [n for n in set(before) | set(after) if before.get(n) != after.get(n)] == [vta]
    old = smd_reader.parse(before[vta], vta)
    new = smd_reader.parse(after[vta], vta)
    base = new.shapes[0][1][:, :3]
    frames = [t for t in sorted(new.shapes) if t > 0]
    changed = [
        t
        for t in frames
        if not np.array_equal(old.shapes[t][0], new.shapes[t][0])
        or not np.array_equal(old.shapes[t][1], new.shapes[t][1])
    ]
    assert len(changed) == 1, changed  # only the edited flex
    indices, values = new.shapes[changed[0]]
    # the moved vertices: 2.5 higher than the basis in the frame (the frame lists each vertex it moves)
    moved = {int(i): v for i, v in zip(indices.tolist(), values[:, :3], strict=True)}
    assert all(
        i in moved and abs(moved[i][2] - base[i][2] - (co[i][2] - body.data.vertices[i].co.z)) < 1e-4 for i in range(50)
    )


def test_a_new_shape_key_is_a_new_flex_with_its_own_controller_and_rule(blender, tmp_path):
    """scout: a shape key made in Blender is one more VTA frame (the vertices it moves, by how much), named after
    it in the flexfile, with a controller and a rule of its name; the file's flexes keep their frames; the QC
    parses with the strict grammar and every file it names is there."""
    import qc_grammar
    import smd_reader

    bpy = blender
    model = imported(bpy, sample_path("source", UNEDITED[3]))
    before = export(bpy, tmp_path / "before")
    body = next(o for o in model.all_objects if o.type == "MESH" and o.data.shape_keys is not None)
    _moved_key(body.shape_key_add(name="grin", from_mix=False), 30, (0.0, 1.5, 0.0))
    after = export(bpy, tmp_path / "after")
    vta = next(n for n in after if n.endswith(".vta"))
    qc_name = next(n for n in after if n.endswith(".qc"))
    assert sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n)) == sorted([vta, qc_name])
    old, new = smd_reader.parse(before[vta], vta), smd_reader.parse(after[vta], vta)
    assert sorted(new.shapes) == [*sorted(old.shapes), len(old.shapes)]
    for t in old.shapes:
        assert all(np.array_equal(a, b) for a, b in zip(old.shapes[t], new.shapes[t], strict=True)), t
    indices, values = new.shapes[len(old.shapes)]
    base = new.shapes[0][1][:, :3]
    assert sorted(indices.tolist()) == list(range(30))
    moved = values[:, :3] - base[indices]
    assert np.allclose(np.abs(moved).max(axis=1), 1.5 / float(model["source_import_scale"]), rtol=1e-4)
    qc = after[qc_name].decode()
    assert f'flex "grin" frame {len(old.shapes)}' in qc
    assert 'flexcontroller default range 0 1 "grin"' in qc and "%grin = grin" in qc
    assert len([line for line in qc.splitlines() if "grin" in line]) == 3
    qc_grammar.check_file(tmp_path / "after" / qc_name)


def test_a_renamed_material_is_renamed_in_the_skin_families(blender, tmp_path):
    """metal_box's skin families: a material of a column that changes between families, renamed in Blender, is
    renamed in $texturegroup and in the SMD; the QC changes nowhere else."""
    bpy = blender
    model = imported(bpy, sample_path("source", METAL_BOX))
    before = export(bpy, tmp_path / "before")
    families = [list(f) for f in model["source_skins"]]
    varying = next(c for c in range(len(families[0])) if len({f[c] for f in families}) > 1)
    material = bpy.data.materials[families[1][varying]]  # used by the second family only
    texture = str(material["source_texture"])
    material.name = "metal_box_repainted"
    after = export(bpy, tmp_path / "after")
    a = before["metal_box.qc"].decode().splitlines()
    b = after["metal_box.qc"].decode().splitlines()
    changed = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    assert len(a) == len(b) and len(changed) == 1, changed
    assert changed[0][1] == changed[0][0].replace(f'"{texture}"', '"metal_box_repainted"')
    smds = [n for n in after if n.endswith(".smd") and after[n] != before[n]]
    for name in smds:  # family 0's meshes do not name it; any SMD that did, now names the new name
        assert after[name].replace(b"metal_box_repainted", texture.encode()) == before[name]


def test_goldsrc_a_renamed_material_renames_its_bmp_and_every_use(blender, tmp_path):
    """houndeye: a material renamed in Blender is the texture's new name in the recompiled model: its BMP is
    written under it (the same pixels), and every SMD and QC line naming the old BMP names the new one; nothing
    else changes."""
    bpy = blender
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    imported(bpy, path)
    before = export(bpy, tmp_path / "before")
    material = next(m for m in bpy.data.materials if m.get("source_texture"))
    texture = str(material["source_texture"])
    material.name = "houndeye repainted"
    after = export(bpy, tmp_path / "after", overwrite=True)
    new = "houndeye repainted.bmp"
    assert texture in before and texture not in after and after[new] == before[texture]
    assert set(after) - {new} == set(before) - {texture}
    for name in set(after) - {new}:
        assert after[name].replace(new.encode(), texture.encode()) == before[name], name
    assert any(after[n] != before[n] for n in set(after) - {new})


@pytest.mark.parametrize("kind", ["bone", "material", "sequence"])
def test_goldsrc_a_name_past_its_field_is_refused_naming_it_and_nothing_is_written(blender, tmp_path, kind):
    """houndeye: GoldSrc keeps names in fixed fields that studiomdl fills with strncpy (a bone's and a sequence's
    32 bytes, a texture's 64, the last one a NUL): a longer name from Blender is refused, named, before any file."""
    bpy = blender
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    imported(bpy, path)
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    if kind == "bone":
        name, limit = "b" * 32, 31
        armature.data.bones[1].name = name
    elif kind == "material":
        name, limit = "m" * 61, 63  # (Blender's own limit is 63 bytes; the SMD names the texture's BMP file)
        next(m for m in bpy.data.materials if m.get("source_texture")).name = name
        name += ".bmp"
    else:
        name, limit = "s" * 40, 31
        armature.animation_data.action = None
        bone = armature.pose.bones[0]
        for frame in (1, 2):
            bone.location = (0.0, 0.0, frame * 0.1)
            bone.keyframe_insert(data_path="location", frame=frame)
        armature.animation_data.action.name = name
    out = tmp_path / "out"
    out.mkdir()
    bpy.context.view_layer.objects.active = armature
    expected = rf"{kind} '{re.escape(name)}' is {len(name)} bytes long; GoldSrc holds at most {limit}"
    with pytest.raises(RuntimeError, match=expected):
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"))
    assert not list(out.iterdir()) and {p.name for p in tmp_path.iterdir()} == {"out"}


def test_the_export_does_not_write_through_a_link(blender, tmp_path):
    bpy = blender
    imported(bpy, sample_path("source", MONSTER))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "anims").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(RuntimeError, match="is a link"):
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"))
    assert list(elsewhere.iterdir()) == []
    assert [p.name for p in out.iterdir()] == ["anims"]  # nothing else published either


def texture_groups(qc: bytes) -> list[list[str]]:
    """The rows of the QC's ``$texturegroup`` (read by the strict grammar), [] without one."""
    import qc_grammar

    rows: list[list[str]] = []
    for statement in qc_grammar.parse(qc):
        if statement.command != "$texturegroup":
            continue
        depth = 0
        for token in statement.args[1:]:
            brace = not token.quoted and token.text in (b"{", b"}")
            if brace:
                depth += 1 if token.text == b"{" else -1
                if depth == 2 and token.text == b"{":
                    rows.append([])
            elif depth == 2:
                rows[-1].append(token.text.decode("latin-1"))
    return rows


def _slot_of_column(model, column: int):
    """A mesh slot that shows skin-table column ``column``."""
    return next(
        o.material_slots[k]
        for o in model.all_objects
        if o.type == "MESH"
        for k, ref in enumerate(o.get("source_skin_refs", []))
        if ref == column
    )


def test_skin_families_edited_in_blender_are_the_texturegroup(blender, tmp_path):
    """metal_box: showing another family changes nothing; a material swapped in a slot while family 1 shows is
    family 1's change alone (the SMDs keep family 0's names); a family added to the collection's table is a new
    row. The QC's other lines stay the decompiler's."""
    from io_ms3d_mdl.blender.source_switch import set_skin

    bpy = blender
    model = imported(bpy, sample_path("source", METAL_BOX))
    before = export(bpy, tmp_path / "before")
    rows = texture_groups(before["metal_box.qc"])
    assert len(rows) >= 2
    set_skin(model, 1)
    assert export(bpy, tmp_path / "shown") == before

    families = [list(f) for f in model["source_skins"]]
    varying = next(c for c in range(len(families[0])) if len({f[c] for f in families}) > 1)
    gold = bpy.data.materials.new("metal_box_gold")
    _slot_of_column(model, varying).material = gold
    swapped = export(bpy, tmp_path / "swapped")
    new_rows = texture_groups(swapped["metal_box.qc"])
    assert new_rows[0] == rows[0] and new_rows[2:] == rows[2:]
    assert [n for n in new_rows[1] if n not in rows[1]] == ["metal_box_gold"]
    assert {n for n in swapped if swapped[n] != before[n]} == {"metal_box.qc"}
    a, b = before["metal_box.qc"].splitlines(), swapped["metal_box.qc"].splitlines()
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1

    set_skin(model, 0)  # (family 1's slots back to its table, so only the added family differs below)
    model["source_skins"] = [*families, [*families[0][:varying], "metal_box_new", *families[0][varying + 1 :]]]
    added = export(bpy, tmp_path / "added")
    columns = [c for c in range(len(families[0])) if len({f[c] for f in families}) > 1]  # the ones written
    row = list(rows[0])
    row[columns.index(varying)] = "metal_box_new"
    assert texture_groups(added["metal_box.qc"]) == [*rows, row]
    assert {n for n in added if added[n] != before[n]} == {"metal_box.qc"}


def test_goldsrc_skin_families_edited_in_blender_are_the_texturegroup(blender, tmp_path):
    """houndeye (three families): a slot of a varying column given another of the model's textures while family 2
    shows is family 2's row in $texturegroup, by that texture's BMP; a material that is no texture of the model
    cannot be a GoldSrc family's (it has no pixels in the file): the file's entry is kept, with a warning."""
    from io_ms3d_mdl.blender.source_switch import set_skin

    bpy = blender
    model = imported(bpy, next(p for p in goldsrc_models() if p.stem == "houndeye"))
    before = export(bpy, tmp_path / "before")
    qc = next(n for n in before if n.endswith(".qc"))
    rows = texture_groups(before[qc])
    assert len(rows) == 3
    families = [list(f) for f in model["source_skins"]]
    varying = next(c for c in range(len(families[0])) if len({f[c] for f in families}) > 1)
    set_skin(model, 2)
    other = next(
        m for m in bpy.data.materials if m.get("source_texture") and m.name not in {f[varying] for f in families}
    )
    _slot_of_column(model, varying).material = other
    after = export(bpy, tmp_path / "after")
    new_rows = texture_groups(after[qc])
    assert new_rows[:2] == rows[:2] and len(new_rows) == 3
    bmp = str(other["source_texture"])
    assert bmp in new_rows[2] and bmp not in rows[2] and bmp in after
    assert {n for n in after if after[n] != before[n]} == {qc}

    _slot_of_column(model, varying).material = bpy.data.materials.new("not_a_texture")
    result = bpy.ops.export_scene.source_qc(filepath=str(tmp_path / "kept" / "model.qc"))
    assert result == {"FINISHED"}
    assert texture_groups(files(tmp_path / "kept")[qc]) == rows


def _delete_bone(bpy, armature, name: str) -> None:
    """``name`` deleted in edit mode (Blender puts its children under its parent)."""
    bpy.context.view_layer.objects.active = armature
    bpy.ops.object.mode_set(mode="EDIT")
    armature.data.edit_bones.remove(armature.data.edit_bones[name])
    bpy.ops.object.mode_set(mode="OBJECT")


def _group_weights(obj, names: list[str]) -> dict[int, dict[str, float]]:
    """Per vertex with weight in any of ``names``, its weights by group."""
    groups = {g.index: g.name for g in obj.vertex_groups}
    out = {}
    for v in obj.data.vertices:
        weights = {groups[g.group]: g.weight for g in v.groups if g.weight > 0}
        if any(n in weights for n in names):
            out[v.index] = weights
    return out


def test_a_deleted_bone_is_left_out_and_blender_source_tools_reads_the_rest_as_blender_has_it(blender, tmp_path):
    """monster_cube: a bone with a child and weighted vertices deleted in edit mode. The reference SMD has no such
    node, its child is under its parent, and the vertices weighted to it are weighted to that parent instead;
    Blender Source Tools builds the skeleton Blender has, and the animation poses every surviving bone as Blender
    does, frame by frame; the QC reads with the strict grammar."""
    import bst_oracle
    import qc_grammar
    import smd_reader
    from test_decompile_readback import unturned

    from io_ms3d_mdl.blender.action_keys import stored_step

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    model = imported(bpy, sample_path("source", MONSTER), bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    body = next(o for o in model.all_objects if o.name.startswith("monster_a_model"))
    gone, parent, child = "turret_box_leftleg_export", "left_leg_hip", "left_leg_knee"
    assert armature.data.bones[child].parent.name == gone
    before = _group_weights(body, [gone])
    assert before
    _delete_bone(bpy, armature, gone)
    assert armature.data.bones[child].parent.name == parent
    action = max((a for a in bpy.data.actions if "source_animation" in a), key=lambda a: int(a["source_frames"]))
    keyed = [c for c in _curves(action) if c.data_path.startswith(f'pose.bones["{gone}"]')]
    assert any(len({k.co[1] for k in c.keyframe_points}) > 1 for c in keyed)  # (it moves: its children follow it)
    step = stored_step(action)
    stem = str(action["source_animation"]).lstrip("@")
    armature.animation_data.action = action
    ours_pose = bst_oracle.pose_matrices(armature, [k * step for k in range(int(action["source_frames"]))])
    ours_rest = bst_oracle.rest_matrices(armature)
    co = {i: np.array(tuple(body.matrix_world @ body.data.vertices[i].co)) for i in before}
    after = export(bpy, tmp_path / "after")
    qc_grammar.check_file(tmp_path / "after" / "monster_cube.qc")
    assert f'"{gone}"'.encode() not in after["monster_cube.qc"]  # (its bone follower is left out)

    smd = next(n for n in after if n.startswith("monster_a_model") and n.endswith(".smd"))
    reference = smd_reader.parse(after[smd], smd)
    assert gone not in reference.names
    assert reference.names[reference.parents[reference.names.index(child)]] == parent
    scale, turn = float(model["source_import_scale"]), axis_turn(model)
    corners = reference.vertices[:, :3]
    for i, weights in before.items():  # each vertex's weight on the deleted bone is its parent's now
        expected = dict(weights)
        expected[parent] = expected.get(parent, 0.0) + expected.pop(gone)
        total = sum(expected.values())
        near = np.flatnonzero(np.linalg.norm(corners - (co[i] @ turn) / scale, axis=1) < 1e-3).tolist()
        got = [{reference.names[b]: w for b, w in reference.weights[k]} for k in near]
        assert any(set(g) == set(expected) and all(abs(g[n] - expected[n] / total) < 1e-5 for n in g) for g in got), (
            i,
            expected,
            got,
        )
    for name in (n for n in after if n.startswith("anims/")):
        anim = smd_reader.parse(after[name], name)
        assert anim.names == reference.names and np.array_equal(anim.parents, reference.parents)

    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    for made in list(bpy.data.actions):
        bpy.data.actions.remove(made)
    theirs = bst_oracle.import_qc(tmp_path / "after" / "monster_cube.qc")
    bst_oracle.compare_rest(ours_rest, bst_oracle.rest_matrices(theirs.armature), 100.0)
    theirs.animations[stem]()
    frames = bst_oracle.bst_frames(theirs.armature)
    assert len(frames) == len(ours_pose[child])
    their_poses = bst_oracle.pose_matrices(theirs.armature, frames)
    assert set(their_poses) == set(ours_pose)
    bst_oracle.compare_poses(unturned(ours_pose, their_poses), their_poses, 100.0, stem)


def test_goldsrc_a_deleted_bone_is_left_out_and_its_children_posed_as_blender_poses_them(blender, tmp_path):
    """houndeye: a bone with children and vertices deleted in edit mode. The reference SMD has no such node and its
    vertices are on its parent; a sequence's SMD poses every surviving bone as Blender does (its children under
    the parent now); the QC reads with the strict grammar; Blender Source Tools builds Blender's skeleton."""
    import bst_oracle
    import qc_grammar
    import smd_reader

    from io_ms3d_mdl.blender.action_keys import stored_step

    bpy = blender
    bst_oracle.enable_bst(bst_oracle.require_bst())
    path = next(p for p in goldsrc_models() if p.stem == "houndeye")
    model = imported(bpy, path, bone_orientation="SOURCE", animations="OWN")
    armature = next(o for o in model.all_objects if o.type == "ARMATURE")
    body = next(o for o in model.all_objects if o.type == "MESH" and o.name.startswith("houndeye"))
    groups = {g.name for g in body.vertex_groups}
    bone = next(b for b in armature.data.bones if b.parent is not None and b.children and b.name in groups)
    gone, parent, child = bone.name, bone.parent.name, bone.children[0].name
    before = _group_weights(body, [gone])
    assert before and all(w == {gone: 1.0} for w in before.values())  # (GoldSrc: one bone per vertex)
    co = {i: np.array(tuple(body.matrix_world @ body.data.vertices[i].co)) for i in before}
    _delete_bone(bpy, armature, gone)
    in_place = [
        a
        for a in bpy.data.actions
        if "source_sequence" in a and not int(a["source_motion_type"]) & 0x1C7 and int(a["source_frames"]) > 2
    ]
    action = max(in_place, key=lambda a: int(a["source_frames"]))
    keyed = [c for c in _curves(action) if c.data_path.startswith(f'pose.bones["{gone}"]')]
    assert any(len({k.co[1] for k in c.keyframe_points}) > 1 for c in keyed)  # (it moves: its children follow it)
    armature.animation_data.action = action
    step = stored_step(action) or 1.0
    posed = bst_oracle.pose_matrices(armature, [k * step for k in range(int(action["source_frames"]))])
    expected = [{n: m[f] for n, m in posed.items()} for f in range(int(action["source_frames"]))]
    ours_rest = bst_oracle.rest_matrices(armature)
    after = export(bpy, tmp_path / "after")
    qc = next(n for n in after if n.endswith(".qc"))
    qc_grammar.check_file(tmp_path / "after" / qc)

    smd = next(n for n in after if n.startswith("houndeye") and n.endswith(".smd") and b"triangles" in after[n])
    reference = smd_reader.parse(after[smd], smd)
    assert gone not in reference.names
    assert reference.names[reference.parents[reference.names.index(child)]] == parent
    scale, turn = float(model["source_import_scale"]), axis_turn(model)
    corners = reference.vertices[:, :3]
    on_parent = [(reference.names.index(parent), 1.0)]
    for i in before:
        near = np.flatnonzero(np.linalg.norm(corners - (co[i] @ turn) / scale, axis=1) < 1e-2).tolist()
        assert near and all(reference.weights[k] == on_parent for k in near), i
    sequence = smd_reader.read(tmp_path / "after" / f"{action['source_animation']}.smd")
    assert sequence.names == reference.names
    assert_posed_as(sequence, expected)

    for obj in list(model.all_objects):
        bpy.data.objects.remove(obj)
    theirs = bst_oracle.import_qc(tmp_path / "after" / qc)
    bst_oracle.compare_rest(ours_rest, bst_oracle.rest_matrices(theirs.armature), 100.0)
