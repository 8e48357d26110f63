"""File › Export › MilkShape 3D with *Split Over Limits* in Blender: a rigged grid past 65,534 vertices is written
as out.ms3d, out_2.ms3d, …, each of which our importer reads, their triangles adding up to the grid's, each with
the whole skeleton and its keys; 300 objects (past 255 groups) become two files Assimp reads with our counts.
Without the option the grid is refused with the limit's message and no file, and an existing out_2.ms3d is never
replaced.

Assimp (assimp_py 1.1.0) reads MS3D triangle and vertex indices as signed 16-bit numbers, so it refuses any MS3D
file past 32,767 triangles, split or not (measured: a 33,282-triangle export, "invalid triangle index"): the
grid's parts, up to 65,534 triangles each, are checked with our reader and importer instead."""

from __future__ import annotations

import math
import os

import numpy as np
import pytest

from io_ms3d_mdl.formats.ms3d.reader import read_ms3d
from io_ms3d_mdl.scene.ms3d.split import part_path


def _rigged_grid(bpy):
    """A grid of 258² or 259² vertices (the count differs between Blender versions), all weighted to one bone of
    a two-bone armature that has three keys."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=258, y_subdivisions=258, size=10.0)
    grid = bpy.context.object
    grid.name = "Big"
    grid.data.materials.append(bpy.data.materials.new("Skin"))
    arm = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    root = arm.edit_bones.new("Root")
    root.head, root.tail = (0, 0, 0), (0, 0, 1)
    tip = arm.edit_bones.new("Tip")
    tip.head, tip.tail, tip.parent = (0, 0, 1), (0, 0, 2), root
    bpy.ops.object.mode_set(mode="OBJECT")
    grid.vertex_groups.new(name="Tip").add(list(range(len(grid.data.vertices))), 1.0, "REPLACE")
    grid.modifiers.new("Armature", "ARMATURE").object = rig
    pose = rig.pose.bones["Tip"]
    for frame, z in ((1, 0.0), (5, 0.5), (9, 0.0)):
        pose.location = (0.0, z, 0.0)
        pose.keyframe_insert("location", frame=frame)
    return grid


def test_a_grid_past_the_vertex_limit_is_written_in_parts(blender, tmp_path):
    bpy = blender
    grid = _rigged_grid(bpy)
    vertices, triangles = len(grid.data.vertices), 2 * len(grid.data.polygons)
    assert vertices > 65_534
    out = tmp_path / "out.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out), split_files=True) == {"FINISHED"}
    names = [part_path("out.ms3d", n) for n in range(1, math.ceil(triangles / 65_534) + 1)]  # as few as can be
    assert len(names) >= 2 and sorted(os.listdir(tmp_path)) == sorted(names)
    parts = [read_ms3d(tmp_path / name) for name in names]
    assert sum(len(p.triangles) for p in parts) == triangles
    assert all(len(p.vertices) <= 65_534 and len(p.triangles) <= 65_534 for p in parts)
    assert sum(len(p.vertices) for p in parts) > vertices  # the row where the cut falls is in both
    for part in parts:
        assert [(j.name, j.parent_name) for j in part.joints] == [("Root", ""), ("Tip", "Root")]
        assert len(part.joints[1].position_keys) == 3
        assert [m.name for m in part.materials] == ["Skin"] and [g.name for g in part.groups] == ["Big"]
        assert (part.vertices["bone_id"] == 1).all()  # every vertex on Tip

    # Our importer reads each part; the two together are the grid's triangles and its whole area.
    found = []
    for name in names:
        bpy.ops.wm.read_factory_settings(use_empty=True)
        assert bpy.ops.import_scene.ms3d(filepath=str(tmp_path / name)) == {"FINISHED"}
        meshes = [o for o in bpy.data.objects if o.type == "MESH"]
        assert [o.name for o in meshes] == ["Big"] and "Tip" in bpy.data.armatures[0].bones
        found.append(sum(len(o.data.polygons) for o in meshes))
    assert sum(found) == triangles


def test_past_255_groups_assimp_reads_every_part(blender, tmp_path):
    assimp = pytest.importorskip("assimp_py")
    bpy = blender
    bpy.ops.mesh.primitive_plane_add()
    plane = bpy.context.object
    plane.data.materials.append(bpy.data.materials.new("Shared"))
    for i in range(299):
        copy = plane.copy()
        copy.name = f"P{i:03}"
        copy.location.x = 3.0 * (i + 1)
        bpy.context.scene.collection.objects.link(copy)
    out = tmp_path / "out.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out), split_files=True) == {"FINISHED"}
    assert sorted(os.listdir(tmp_path)) == ["out.ms3d", "out_2.ms3d"]
    counts = []
    for name in ("out.ms3d", "out_2.ms3d"):
        scene = assimp.import_file(str(tmp_path / name), 0)
        model = read_ms3d(tmp_path / name)
        assert sum(m.num_faces for m in scene.meshes) == len(model.triangles) == 2 * len(model.groups)
        assert scene.num_meshes == len(model.groups) and [m.name for m in model.materials] == ["Shared"]
        counts.append(len(model.groups))
    assert counts == [255, 45]


def test_without_the_option_it_is_refused_and_no_file_is_written(blender, tmp_path):
    vertices = len(_rigged_grid(blender).data.vertices)
    with pytest.raises(RuntimeError, match=f"{vertices:,} vertices; MilkShape 3D holds at most 65,534 vertices"):
        blender.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))
    assert os.listdir(tmp_path) == []


def test_an_existing_second_part_is_never_replaced(blender, tmp_path):
    _rigged_grid(blender)
    out, second = tmp_path / "out.ms3d", tmp_path / "out_2.ms3d"
    out.write_bytes(b"chosen")
    second.write_bytes(b"mine")
    with pytest.raises(RuntimeError, match=r"out_2\.ms3d exists and the export was not asked to replace it"):
        blender.ops.export_scene.ms3d(filepath=str(out), split_files=True)
    assert (out.read_bytes(), second.read_bytes()) == (b"chosen", b"mine")
    assert sorted(os.listdir(tmp_path)) == ["out.ms3d", "out_2.ms3d"]  # no partial file either


def test_the_report_names_every_file(blender, tmp_path):
    from io_ms3d_mdl.blender.ms3d_export import export_ms3d
    from io_ms3d_mdl.blender.scene_reader import ReadOptions
    from io_ms3d_mdl.scene.ms3d.export import Ms3dExportOptions

    grid = _rigged_grid(blender)
    result = export_ms3d(blender.context, str(tmp_path / "out.ms3d"), ReadOptions(), Ms3dExportOptions(split=True))
    names = sorted(os.listdir(tmp_path), key=lambda n: (len(n), n))  # out.ms3d, out_2.ms3d, …
    assert result.paths == [str(tmp_path / name) for name in names] and len(names) >= 2
    assert result.summary().startswith(f"Exported {len(names)} files ({', '.join(names)}): ")
    assert result.triangles == 2 * len(grid.data.polygons) and result.joints == 2
    assert np.isfinite(result.seconds)
