"""Red-team pass on the exports (issue 33), in the bpy wheel: scenes a hostile user (or a stranger's .blend) can
make. Each is written correctly or refused through the operator with one message naming the object, property or
action, never a traceback, and a refused export leaves the file that was there untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import sample_path

pytestmark = pytest.mark.blender

NAN, INF = float("nan"), float("inf")


def _triangle(bpy, name="Tri", verts=((0, 0, 0), (1, 0, 0), (0, 1, 0)), faces=((0, 1, 2),), edges=()):
    me = bpy.data.meshes.new(name)
    me.from_pydata([list(v) for v in verts], list(edges), list(faces))
    obj = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def _rig(bpy, mesh):
    """Two bones weighting ``mesh``, with an action keying the first."""
    arm = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    for i in range(2):
        bone = arm.edit_bones.new(f"B{i}")
        bone.head, bone.tail = (i, 0, 0), (i, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    mesh.modifiers.new("Armature", "ARMATURE").object = rig
    for i in range(2):
        mesh.vertex_groups.new(name=f"B{i}").add([0, 1, 2], 0.5, "REPLACE")
    pose = rig.pose.bones["B0"]
    pose.rotation_mode = "QUATERNION"
    for frame in (1, 5):
        pose.keyframe_insert("rotation_quaternion", frame=frame)
    return rig


def _refused(bpy, path: Path, *words: str) -> None:
    """The export is refused with one message holding ``words``, and ``path`` keeps what it held."""
    path.write_bytes(b"the user's own file")
    with pytest.raises(RuntimeError) as caught:
        bpy.ops.export_scene.ms3d(filepath=str(path))
    message = str(caught.value)
    assert "Traceback" not in message, message
    for word in words:
        assert word in message, message
    assert path.read_bytes() == b"the user's own file"
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]


def test_a_mesh_without_faces_is_left_out_with_a_warning(blender, tmp_path):
    """Found: a mesh of loose points or edges only (no corners at all) ended in KeyError '.corner_vert'."""
    bpy = blender
    _triangle(bpy, "Points", faces=())
    _triangle(bpy, "Edges", faces=(), edges=((0, 1), (1, 2)))
    _triangle(bpy, "Tri", verts=((0, 0, 0), (1, 0, 0), (0, 1, 0), (5, 5, 5)))  # a loose vertex is kept
    from io_ms3d_mdl.blender.ms3d_export import export_ms3d
    from io_ms3d_mdl.blender.scene_reader import ReadOptions
    from io_ms3d_mdl.formats.ms3d.reader import read_ms3d

    out = tmp_path / "out.ms3d"
    result = export_ms3d(bpy.context, str(out), ReadOptions())
    assert sorted(w for w in result.warnings if "no faces" in w) == [
        "object 'Edges' has no faces; MilkShape 3D groups hold triangles, so it is left out",
        "object 'Points' has no faces; MilkShape 3D groups hold triangles, so it is left out",
    ]
    model = read_ms3d(out)
    assert [g.name for g in model.groups] == ["Tri"] and len(model.vertices) == 4


@pytest.mark.parametrize(
    "what, value",
    [("position", NAN), ("position", INF), ("position", 1e35), ("uv", NAN)],
    ids=["nan-position", "inf-position", "past-float32-at-scale", "nan-uv"],
)
def test_coordinates_that_are_not_finite_are_refused_naming_the_object(blender, tmp_path, what, value):
    """Found: NaN and infinite positions and UVs were written into the file as they were (and a coordinate float32
    holds became infinite after the export's scale)."""
    bpy = blender
    obj = _triangle(bpy, "Broken")
    if what == "position":  # (set in bulk: a vertex's ``co`` clamps infinity to float32's largest)
        obj.data.vertices.foreach_set("co", [value, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0])
    else:
        obj.data.uv_layers.new(name="UVMap").data[0].uv = (value, 0.0)
    if value == 1e35:  # finite in Blender, infinite in the file at the smallest scale offered
        path = tmp_path / "out.ms3d"
        path.write_bytes(b"the user's own file")
        with pytest.raises(RuntimeError, match="object 'Broken': 1 of its vertex positions are not finite"):
            bpy.ops.export_scene.ms3d(filepath=str(path), scale=1e-6)
        assert path.read_bytes() == b"the user's own file"
        return
    kind = "vertex positions" if what == "position" else "UVs"
    _refused(bpy, tmp_path / "out.ms3d", "object 'Broken'", f"of its {kind} are not finite numbers")


def test_an_object_scaled_to_zero_is_refused_naming_it(blender, tmp_path):
    """Found: a scale of 0 on an axis ended in numpy's LinAlgError ('Singular matrix') inverting it for normals."""
    bpy = blender
    _triangle(bpy, "Flat").scale = (1.0, 0.0, 1.0)
    _refused(bpy, tmp_path / "out.ms3d", "object 'Flat'", "scale of 0")


def test_a_mirrored_object_exports(blender, tmp_path):
    bpy = blender
    _triangle(bpy, "Mirrored").scale = (-1.0, 1.0, 1.0)
    assert bpy.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d")) == {"FINISHED"}


STORED = [
    ("object", "ms3d_group_flags", "abc", "a whole number from 0 to 255"),
    ("object", "ms3d_comment", 5, "text"),
    ("object", "ms3d_group_index", "z", "a number"),
    ("collection", "ms3d_total_frames", 1e30, "a whole number from -2,147,483,648 to 2,147,483,647"),
    ("collection", "ms3d_fps", "x", "a number"),
    ("collection", "ms3d_vertex_extra", 7, "a whole number from 0 to 3"),
    ("collection", "ms3d_model_comment", [1, 2], "text"),
    ("collection", "ms3d_transparency_mode", 1e20, "a whole number"),
    ("material", "ms3d_ambient", [1.0, 2.0], "a list of 4 numbers"),
    ("material", "ms3d_diffuse", "red", "a list of 4 numbers"),
    ("material", "ms3d_mode", 1e30, "a whole number from 0 to 255"),
    ("material", "ms3d_comment", [1], "text"),
    ("bone", "ms3d_flags", "x", "a whole number from 0 to 255"),
    ("bone", "ms3d_color", [1.0, 2.0], "a list of 3 numbers"),
    ("bone", "ms3d_comment", 3.5, "text"),
]


@pytest.mark.parametrize("owner, key, value, wanted", STORED, ids=[f"{o}-{k}" for o, k, _, _ in STORED])
def test_stored_properties_of_the_wrong_kind_are_refused_naming_them(blender, tmp_path, owner, key, value, wanted):
    """Found: the ``ms3d_*`` values an import keeps, set to another type or past their field, ended in ValueError,
    TypeError, AttributeError or struct.error from deep inside the export (or a KeyError for a sub-version)."""
    bpy = blender
    mesh = _triangle(bpy, "Tri")
    collection = bpy.data.collections.new("Model")
    bpy.context.scene.collection.children.link(collection)
    bpy.context.scene.collection.objects.unlink(mesh)
    collection.objects.link(mesh)
    material = bpy.data.materials.new("Mat")
    mesh.data.materials.append(material)
    rig = _rig(bpy, mesh)
    target = {"object": mesh, "collection": collection, "material": material, "bone": rig.data.bones["B0"]}[owner]
    target[key] = value
    named = {"object": "object 'Tri'", "collection": "the model", "material": "material 'Mat'", "bone": "bone 'B0'"}
    _refused(bpy, tmp_path / "out.ms3d", named[owner], f"'{key}'", wanted)


@pytest.mark.parametrize("clips", ["abc", [{"name": "walk"}]], ids=["text", "no-frames"])
def test_a_clip_list_that_is_not_one_is_refused_naming_the_armature(blender, tmp_path, clips):
    """Found: TypeError / KeyError from the armature's ``ms3d_clips``."""
    bpy = blender
    _rig(bpy, _triangle(bpy))["ms3d_clips"] = clips
    _refused(bpy, tmp_path / "out.ms3d", "armature 'Rig'", "'ms3d_clips'")


def test_a_key_that_is_not_a_number_is_refused_naming_the_action_and_bone(blender, tmp_path):
    """Found: a NaN key value became NaN Euler angles in the file."""
    bpy = blender
    rig = _rig(bpy, _triangle(bpy))
    from io_ms3d_mdl.blender.scene_reader import _action_fcurves

    _action_fcurves(rig.animation_data.action, rig)[0].keyframe_points[0].co = (1.0, NAN)
    _refused(bpy, tmp_path / "out.ms3d", f"action '{rig.animation_data.action.name}'", "bone 'B0'", "not finite")


def test_keys_at_fractional_negative_and_far_frames_export(blender, tmp_path):
    """Already fine: keys between frames, before 0 and a million frames on are written at their times."""
    bpy = blender
    rig = _rig(bpy, _triangle(bpy))
    pose = rig.pose.bones["B1"]
    pose.rotation_mode = "QUATERNION"
    for frame in (-10.0, 2.5, 1e6):
        pose.keyframe_insert("rotation_quaternion", frame=frame)
    from io_ms3d_mdl.formats.ms3d.reader import read_ms3d

    out = tmp_path / "out.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out)) == {"FINISHED"}
    fps = bpy.context.scene.render.fps / bpy.context.scene.render.fps_base
    joint = next(j for j in read_ms3d(out).joints if j.name == "B1")
    assert sorted((joint.rotation_keys["time"] * fps).round(3).tolist()) == [-10.0, 2.5, 1e6]


# --- Source Model Sources: names the user gives in Blender ------------------------------------------------------

MONSTER = "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"


def _monster(bpy):
    """monster_cube imported, its armature active: (its collection, the armature)."""
    assert bpy.ops.import_scene.source_mdl(filepath=str(sample_path("source", MONSTER)), units="SOURCE") == {"FINISHED"}
    model = next(c for c in bpy.data.collections if "source_version" in c)
    rig = next(o for o in model.all_objects if o.type == "ARMATURE")
    bpy.context.view_layer.objects.active = rig
    return model, rig


@pytest.mark.parametrize(
    "name", ["../../x", 'x"\n$include "evil.qc" { }', "con"], ids=["climbs", "injects", "reserved"]
)
def test_hostile_names_given_in_blender_stay_names_in_the_source_export(blender, tmp_path, name):
    """Already fine: a material, object, bone and new action renamed to climb out, inject a QC line or be a
    reserved device name give a QC the strict tokenizer reads (every file it names there), SMDs the strict reader
    reads, and no file outside the output folder."""
    import qc_grammar
    import smd_reader

    bpy = blender
    model, rig = _monster(bpy)
    mesh = next(o for o in model.all_objects if o.type == "MESH")
    mesh.material_slots[0].material.name = name
    mesh.name = name
    rig.data.bones[1].name = name
    action = bpy.data.actions.new(name)
    rig.animation_data_create().action = action
    pose = rig.pose.bones[name]
    pose.rotation_mode = "QUATERNION"
    for frame in (0, 5):
        pose.rotation_quaternion = (1.0, 0.1 * frame, 0.0, 0.0)
        pose.keyframe_insert("rotation_quaternion", frame=frame)
    work = tmp_path / "work"
    out = work / "out"
    out.mkdir(parents=True)
    assert bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc")) == {"FINISHED"}
    assert sorted(p.name for p in work.iterdir()) == ["out"]
    statements = qc_grammar.check_file(next(out.glob("*.qc")))
    assert not any(s.command == "$include" for s in statements)
    for smd in out.rglob("*.smd"):
        smd_reader.read(smd)
    assert all(p.resolve().is_relative_to(out.resolve()) for p in out.rglob("*"))
    shutil.rmtree(work)


@pytest.mark.parametrize(
    "in_the_way, overwrite, words",
    [
        ("anims", False, "is a file where the export makes a folder"),
        ("anims", True, "is a file where the export makes a folder"),
        ("anims/idle.smd/", True, "is a folder where the export writes a file"),
        ("monster_cube.qc/", True, "is a folder where the export writes a file"),
    ],
    ids=["file-for-folder", "file-for-folder-overwrite", "folder-for-smd-overwrite", "folder-for-qc-overwrite"],
)
def test_a_file_or_folder_in_the_way_refuses_the_source_export_before_any_file_moves(
    blender, tmp_path, in_the_way, overwrite, words
):
    """Found: a file where the export puts its ``anims`` folder, or a folder where it puts a file, failed with
    FileExistsError or IsADirectoryError (naming the hidden staging folder) after part of the export had been moved
    in: 6 to 18 files of a half export were left in the user's folder."""
    bpy = blender
    _monster(bpy)
    out = tmp_path / "out"
    blocker = out / in_the_way
    if in_the_way.endswith("/"):
        blocker.mkdir(parents=True)
    else:
        out.mkdir()
        blocker.write_bytes(b"the user's own file")
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    with pytest.raises(RuntimeError) as caught:
        bpy.ops.export_scene.source_qc(filepath=str(out / "model.qc"), overwrite=overwrite)
    assert words in str(caught.value) and ".partial" not in str(caught.value), str(caught.value)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    if not in_the_way.endswith("/"):
        assert blocker.read_bytes() == b"the user's own file"


def test_the_longest_file_name_the_folder_holds_is_written(blender, tmp_path):
    """Found: the hidden temporary file was named after the target plus 27 characters, so a target name of 229 to
    255 bytes (valid) failed with an OSError traceback ('File name too long') from the MilkShape operator."""
    bpy = blender
    _triangle(bpy)
    path = tmp_path / ("n" * 250 + ".ms3d")
    assert bpy.ops.export_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_a_write_the_system_refuses_is_one_message_and_leaves_nothing(blender, tmp_path, monkeypatch):
    """Found: an OSError while writing (a full disk, a read-only or special file system) was a traceback."""
    import errno
    import os

    bpy = blender
    _triangle(bpy)

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    path = tmp_path / "out.ms3d"
    _refused(bpy, path, "out.ms3d could not be written", os.strerror(errno.ENOSPC))
