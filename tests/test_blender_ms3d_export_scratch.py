"""A rigged, animated mesh made from scratch in Blender exports to MilkShape 3D, and two independent readers give
it back: MilkShape's own skinning maths (rig.py, the reference evaluator) poses the exported file exactly as
Blender poses the scene, and Assimp reads every export with our triangle, vertex, group and joint counts
(assimp_py) and animation key counts per joint (assimpjs). Errors name the object and what is wrong, and a failed
export leaves no file."""

from __future__ import annotations

import os

import numpy as np
import pytest
from conftest import sample_names_to_parametrize, sample_path

from io_ms3d_mdl.errors import Warnings
from io_ms3d_mdl.formats.ms3d.reader import read_ms3d
from io_ms3d_mdl.scene.axes import axis_conversion_matrix
from io_ms3d_mdl.scene.ms3d.rig import hierarchy, skinned_positions

RINGS, SIDES = 5, 8


def _column(bpy):
    """A tube of RINGS rings along +Z, two bones up its middle, weights blending over the middle rings, a
    Principled material with an image, and an action bending the upper bone."""
    angles = np.linspace(0, 2 * np.pi, SIDES, endpoint=False)
    ring = np.stack([np.cos(angles), np.sin(angles)], axis=1) * 0.3
    z = np.linspace(0.0, 2.0, RINGS)
    verts = np.concatenate([np.c_[ring, np.full(SIDES, h)] for h in z])
    faces = []
    for r in range(RINGS - 1):
        for s in range(SIDES):
            a, b = r * SIDES + s, r * SIDES + (s + 1) % SIDES
            faces.append((a, b, b + SIDES, a + SIDES))
    me = bpy.data.meshes.new("Column")
    me.from_pydata(verts.tolist(), [], faces)
    me.uv_layers.new(name="UVMap")
    me.shade_smooth()
    obj = bpy.data.objects.new("Column", me)
    bpy.context.scene.collection.objects.link(obj)

    arm = bpy.data.armatures.new("Rig")
    rig = bpy.data.objects.new("Rig", arm)
    bpy.context.scene.collection.objects.link(rig)
    bpy.context.view_layer.objects.active = rig
    bpy.ops.object.mode_set(mode="EDIT")
    lower = arm.edit_bones.new("Lower")
    lower.head, lower.tail = (0, 0, 0), (0, 0, 1)
    upper = arm.edit_bones.new("Upper")
    upper.head, upper.tail, upper.parent = (0, 0, 1), (0, 0.1, 2), lower
    bpy.ops.object.mode_set(mode="OBJECT")

    heights = verts[:, 2]
    up = np.clip(heights - 0.5, 0.0, 1.0)  # 0 below z = 0.5, 1 above z = 1.5
    groups = {"Lower": 1.0 - up, "Upper": up}
    for name, weights in groups.items():
        group = obj.vertex_groups.new(name=name)
        for value in np.unique(weights[weights > 0]).tolist():  # one call per distinct weight
            group.add(np.flatnonzero(weights == value).tolist(), value, "REPLACE")
    modifier = obj.modifiers.new("Armature", "ARMATURE")
    modifier.object = rig
    obj.parent = rig

    mat = bpy.data.materials.new("Skin")
    if bpy.app.version < (5, 0, 0):
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (0.8, 0.2, 0.1, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.4
    image = bpy.data.images.new("skin", 4, 4)
    tex = mat.node_tree.nodes.new("ShaderNodeTexImage")
    tex.image = image
    mat.node_tree.links.new(tex.outputs["Color"], bsdf.inputs["Base Color"])
    me.materials.append(mat)

    pose = rig.pose.bones["Upper"]
    pose.rotation_mode = "QUATERNION"
    for frame, angle in ((1, 0.0), (10, 0.6), (20, -0.4)):
        pose.rotation_quaternion = (np.cos(angle / 2), np.sin(angle / 2), 0.0, 0.0)
        pose.location = (0.0, 0.1 * angle, 0.0)
        pose.keyframe_insert("rotation_quaternion", frame=frame)
        pose.keyframe_insert("location", frame=frame)
    bpy.context.scene.frame_start, bpy.context.scene.frame_end = 1, 20
    return obj, rig


def _posed(bpy, obj, frame: int) -> np.ndarray:
    bpy.context.scene.frame_set(frame)
    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    me = evaluated.to_mesh()
    out = np.empty(len(me.vertices) * 3, np.float32)
    me.vertices.foreach_get("co", out)
    evaluated.to_mesh_clear()
    world = np.array(obj.matrix_world)
    return out.reshape(-1, 3) @ world[:3, :3].T + world[:3, 3]


def test_scratch_rig_exports_and_milkshape_poses_it_as_blender_does(blender, tmp_path):
    bpy = blender
    obj, _ = _column(bpy)
    out = tmp_path / "column.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out)) == {"FINISHED"}
    model = read_ms3d(out)
    assert (len(model.vertices), len(model.triangles)) == (RINGS * SIDES, (RINGS - 1) * SIDES * 2)
    assert [j.name for j in model.joints] == ["Lower", "Upper"]
    assert [j.parent_name for j in model.joints] == ["", "Lower"]
    assert model.materials[0].name == "Skin" and model.materials[0].texture == "skin"
    assert np.allclose(model.materials[0].diffuse[:3], (0.8, 0.2, 0.1))
    assert len(model.joints[1].rotation_keys) == 3 and len(model.joints[1].position_keys) == 3
    rig = hierarchy(model, Warnings())
    to_blender = axis_conversion_matrix("Z", "Y")
    for frame in (1, 10, 20):  # key frames: Blender's Bezier and MilkShape's slerp agree there
        expected = _posed(bpy, obj, frame)
        got = skinned_positions(model, rig, frame) @ to_blender.T
        np.testing.assert_allclose(got, expected, atol=1e-5, err_msg=f"frame {frame}")

    # Our importer gives it back: the same posed mesh in a new file.
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.ms3d(filepath=str(out))
    column = bpy.data.objects["Column"]
    bpy.context.scene.frame_set(10)
    np.testing.assert_allclose(_posed(bpy, column, 10), _reference(model, rig, 10), atol=1e-5)


def _reference(model, rig, frame):
    return skinned_positions(model, rig, frame) @ axis_conversion_matrix("Z", "Y").T


def _assimp_counts(path):
    assimp = pytest.importorskip("assimp_py")
    scene = assimp.import_file(str(path), 0)

    def count(node) -> int:
        return 1 + sum(count(c) for c in node.children)

    joint_roots = [c for c in scene.root_node.children if c.name == "<MS3DJointRoot>"]
    joints = sum(count(c) - 1 for c in joint_roots)
    return (
        sum(m.num_faces for m in scene.meshes),
        sum(m.num_vertices for m in scene.meshes),
        scene.num_meshes,
        joints,
    )


def _our_counts(path):
    model = read_ms3d(path)
    return len(model.triangles), 3 * len(model.triangles), len(model.groups), len(model.joints)


def test_assimp_reads_the_scratch_export(blender, tmp_path):
    _column(blender)
    out = tmp_path / "column.ms3d"
    blender.ops.export_scene.ms3d(filepath=str(out))
    assert _assimp_counts(out) == _our_counts(out) == (64, 192, 1, 2)


# Assimp 5.4.3 drops joints whose parent it cannot find and reads version 4 only; none of our exports is either.
@pytest.mark.parametrize("name", sample_names_to_parametrize("ms3d", "*.ms3d"))
def test_assimp_reads_every_sample_export(blender, tmp_path, name):
    bpy = blender
    bpy.ops.import_scene.ms3d(filepath=str(sample_path("ms3d", name)))
    if not any(o.type == "MESH" for o in bpy.data.objects):
        pytest.skip("the import makes no mesh, so there is nothing to export")
    out = tmp_path / "out.ms3d"
    bpy.ops.export_scene.ms3d(filepath=str(out))
    assert _assimp_counts(out) == _our_counts(out)


def test_assimp_reads_every_export_with_our_animation_key_counts(blender, tmp_path):
    """Assimp itself (assimpjs, which exposes the animation assimp_py does not) reads the export of every sample
    with a mesh and of the scratch rig with the same key counts per joint as our reader, and the same triangles;
    every sample's export keys some joint."""
    from assimp_js import assimp_scenes, key_counts, our_key_counts

    bpy = blender
    outs = []
    for name in sample_names_to_parametrize("ms3d", "*.ms3d"):
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.ops.import_scene.ms3d(filepath=str(sample_path("ms3d", name)))
        if any(o.type == "MESH" for o in bpy.data.objects):
            outs.append(tmp_path / f"{len(outs)}.ms3d")
            assert bpy.ops.export_scene.ms3d(filepath=str(outs[-1])) == {"FINISHED"}
    bpy.ops.wm.read_factory_settings(use_empty=True)
    _column(bpy)
    outs.append(tmp_path / "column.ms3d")
    assert bpy.ops.export_scene.ms3d(filepath=str(outs[-1])) == {"FINISHED"}
    scenes = assimp_scenes(outs)
    keyed = 0
    for out in outs:
        scene = scenes[str(out)]
        assert "error" not in scene, out.name
        ours = our_key_counts(out)
        assert key_counts(scene) == ours, out.name
        assert sum(faces for _, faces, _ in scene["meshes"]) == len(read_ms3d(out).triangles)
        keyed += bool(ours)
    assert keyed >= 5 and our_key_counts(outs[-1])  # the animated samples, and the scratch rig's bend


# --- errors and limits -------------------------------------------------------------------------------------------


def _files(folder) -> list[str]:
    return sorted(os.listdir(folder))


def _plane(bpy, name="Plane", cuts=0):
    """A grid (its vertex count differs between Blender versions: tests read it back)."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=cuts + 2, y_subdivisions=cuts + 2)
    obj = bpy.context.object
    obj.name = name
    return obj


def test_a_name_past_32_bytes_is_refused_naming_it_and_the_old_file_stays(blender, tmp_path):
    _plane(blender, "A" * 40)
    out = tmp_path / "out.ms3d"
    out.write_bytes(b"old")
    with pytest.raises(RuntimeError, match=f"group name '{'A' * 40}' \\(object .*\\) is 40 bytes long; .* at most 32"):
        blender.ops.export_scene.ms3d(filepath=str(out))
    assert out.read_bytes() == b"old"
    assert _files(tmp_path) == ["out.ms3d"]  # no partial file either


def test_more_than_four_influences_are_dropped_with_one_warning_or_refused(blender, tmp_path):
    bpy = blender
    obj = _plane(bpy, "Skin")
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    bpy.ops.object.mode_set(mode="EDIT")
    names = []
    for i in range(5):
        bone = rig.data.edit_bones.new(f"B{i}")
        bone.head, bone.tail = (i, 0, 0), (i, 0, 1)
        names.append(bone.name)
    bpy.ops.object.mode_set(mode="OBJECT")
    for i, name in enumerate(names):
        obj.vertex_groups.new(name=name).add([0], 0.1 * (i + 1), "REPLACE")
    obj.modifiers.new("Armature", "ARMATURE").object = rig
    out = tmp_path / "out.ms3d"
    with pytest.raises(RuntimeError, match="object 'Skin': 1 vertex has more than 4 joint influences"):
        bpy.ops.export_scene.ms3d(filepath=str(out), too_many_influences="ERROR")
    assert _files(tmp_path) == []
    assert len(bpy.data.node_groups) == 0 and [m.type for m in obj.modifiers] == ["ARMATURE"]  # nothing left
    assert obj.modifiers[0].show_viewport  # switched back on after the rest-pose read
    from io_ms3d_mdl.blender.ms3d_export import export_ms3d
    from io_ms3d_mdl.blender.scene_reader import ReadOptions

    result = export_ms3d(bpy.context, str(out), ReadOptions())
    assert [w for w in result.warnings if "more than 4 joint influences" in w] == [
        "1 vertex had more than 4 joint influences ('Skin' 1); the smallest were dropped and the rest rescaled"
    ]
    model = read_ms3d(out)
    extra = model.vertex_extra
    # Vertex 0 keeps B4, B3, B2, B1 (0.5, 0.4, 0.3, 0.2 of 1.4): 36 %, 29 %, 21 %, implied 14 %.
    assert model.vertices["bone_id"][0] == 5  # the armature_add bone is joint 0
    assert extra.weights[0].tolist() == [36, 29, 21]
    assert extra.bone_ids[0].tolist() == [4, 3, 2]


def test_an_armature_modifier_without_armature_is_named(blender, tmp_path):
    obj = _plane(blender, "Loose")
    obj.modifiers.new("Rig", "ARMATURE")
    with pytest.raises(RuntimeError, match="object 'Loose': its Armature modifier 'Rig' names no armature"):
        blender.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))
    assert _files(tmp_path) == []


def test_too_many_vertices_is_one_message_naming_the_limit(blender, tmp_path):
    count = len(_plane(blender, "Big", cuts=256).data.vertices)  # 258 or 259 squared
    assert count > 65_534
    with pytest.raises(RuntimeError, match=f"{count:,} vertices; MilkShape 3D holds at most 65,534 vertices"):
        blender.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))
    assert _files(tmp_path) == []


def test_too_many_triangles_is_named(blender, tmp_path):
    quads = sum(len(_plane(blender, name, cuts=c).data.polygons) for name, c in (("Dense", 176), ("More", 40)))
    assert 2 * quads > 65_534 and quads < 65_534  # too many triangles, few enough vertices
    with pytest.raises(RuntimeError, match=f"{2 * quads:,} triangles; MilkShape 3D holds at most 65,534 triangles"):
        blender.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))


def test_too_many_joints_is_named(blender, tmp_path):
    bpy = blender
    _plane(bpy)
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    bpy.ops.object.mode_set(mode="EDIT")
    for i in range(128):
        bone = rig.data.edit_bones.new(f"J{i}")
        bone.head, bone.tail = (0, 0, i), (0, 0, i + 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    rig.select_set(True)
    with pytest.raises(RuntimeError, match="129 joints; MilkShape 3D holds at most 128 joints"):
        bpy.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"), use_selection=False)


def test_too_many_materials_is_named(blender, tmp_path):
    bpy = blender
    obj = _plane(bpy, "Patchwork", cuts=10)  # 121 faces
    me = obj.data
    for i in range(129):
        me.materials.append(bpy.data.materials.new(f"M{i}"))
    me.polygons.foreach_set("material_index", np.arange(len(me.polygons), dtype=np.int32) % 129)
    me.polygons.add(0)
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide()  # 484 faces, every material used
    bpy.ops.object.mode_set(mode="OBJECT")
    with pytest.raises(RuntimeError, match="MilkShape 3D holds at most 128 materials"):
        bpy.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))


def test_too_many_groups_is_named(blender, tmp_path):
    bpy = blender
    obj = _plane(bpy, "G")
    for i in range(256):
        copy = obj.copy()
        copy.name = f"G{i}"
        bpy.context.scene.collection.objects.link(copy)
    with pytest.raises(RuntimeError, match="257 groups; MilkShape 3D holds at most 255 groups"):
        bpy.ops.export_scene.ms3d(filepath=str(tmp_path / "out.ms3d"))


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symbolic links here")
def test_a_link_is_never_written_through(blender, tmp_path):
    _plane(blender)
    target = tmp_path / "elsewhere.ms3d"
    target.write_bytes(b"keep")
    link = tmp_path / "out.ms3d"
    link.symlink_to(target)
    with pytest.raises(RuntimeError, match="is a link; the export does not write through it"):
        blender.ops.export_scene.ms3d(filepath=str(link))
    assert target.read_bytes() == b"keep" and link.is_symlink()
    assert _files(tmp_path) == ["elsewhere.ms3d", "out.ms3d"]


def test_selection_only_and_groups_per_material(blender, tmp_path):
    bpy = blender
    a = _plane(bpy, "A")
    b = _plane(bpy, "B")
    for obj in (a, b):
        obj.data.materials.append(bpy.data.materials.get("Shared") or bpy.data.materials.new("Shared"))
    bpy.ops.object.select_all(action="DESELECT")
    a.select_set(True)
    out = tmp_path / "out.ms3d"
    bpy.ops.export_scene.ms3d(filepath=str(out), use_selection=True)
    assert [g.name for g in read_ms3d(out).groups] == ["A"]
    bpy.ops.export_scene.ms3d(filepath=str(out), groups="MATERIAL")
    model = read_ms3d(out)
    assert [g.name for g in model.groups] == ["Shared"]
    assert len(model.groups[0].triangle_indices) == 2 * (len(a.data.polygons) + len(b.data.polygons))


def test_every_action_becomes_a_clip_in_the_comment(blender, tmp_path):
    bpy = blender
    _, rig = _column(bpy)
    first = rig.animation_data.action
    second = first.copy()
    second.name = "Wave"
    first.name = "Bend"
    out = tmp_path / "clips.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out), animation="ALL") == {"FINISHED"}
    model = read_ms3d(out)
    from io_ms3d_mdl.scene.ms3d.armature import parse_clips

    clips = [(c.name, c.start, c.end) for c in parse_clips(model.model_comment)]
    assert clips == [("Bend", 1.0, 20.0), ("Wave", 21.0, 40.0)]
    assert len(model.joints[1].rotation_keys) == 6  # three keys each, the second action after the first
    frames = model.joints[1].rotation_keys["time"] * model.fps
    np.testing.assert_allclose(frames, [1, 10, 20, 21, 30, 40], atol=1e-3)
    assert bpy.ops.export_scene.ms3d(filepath=str(out), animation="NONE") == {"FINISHED"}
    assert all(len(j.rotation_keys) == 0 for j in read_ms3d(out).joints)


def test_a_mirrored_object_keeps_its_faces_outward(blender, tmp_path):
    bpy = blender
    obj = _plane(bpy, "Mirror")
    obj.scale = (-1.0, 1.0, 1.0)
    out = tmp_path / "m.ms3d"
    bpy.ops.export_scene.ms3d(filepath=str(out))
    model = read_ms3d(out)
    p = model.vertices["position"].astype(np.float64)
    tri = model.triangles["indices"].astype(np.int64)
    normal = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    stored = model.triangles["normals"][:, 0].astype(np.float64)
    assert (np.einsum("ij,ij->i", normal, stored) > 0).all()  # winding agrees with the stored normals


# --- the Transform options and Apply Modifiers -------------------------------------------------------------------


@pytest.mark.parametrize(("forward", "up", "scale"), [("Y", "Z", 2.0), ("-X", "Z", 0.5), ("Z", "Y", 40.0)])
def test_scale_and_axes_pose_the_file_as_blender_does_and_import_back(blender, tmp_path, forward, up, scale):
    """Scale, Forward and Up reach the vertices, the joints and the keys: MilkShape's own maths, turned and scaled
    back the way the options say, pose the file as Blender poses the scene, and the import with the same options
    gives the posed mesh back."""
    bpy = blender
    obj, _ = _column(bpy)
    out = tmp_path / "column.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out), scale=scale, axis_forward=forward, axis_up=up) == {"FINISHED"}
    model = read_ms3d(out)
    rig = hierarchy(model, Warnings())
    to_blender = axis_conversion_matrix(forward, up) * scale
    for frame in (1, 10, 20):
        expected = _posed(bpy, obj, frame)
        np.testing.assert_allclose(skinned_positions(model, rig, frame) @ to_blender.T, expected, atol=1e-5 * scale)
    height = model.vertices["position"].astype(np.float64) @ axis_conversion_matrix(forward, up)[2]
    assert np.ptp(height) == pytest.approx(2.0 / scale, rel=1e-5)  # the column's 2 units along the chosen up

    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.ms3d(filepath=str(out), scale=scale, axis_forward=forward, axis_up=up)
    column = bpy.data.objects["Column"]
    expected = skinned_positions(model, rig, 10) @ to_blender.T
    np.testing.assert_allclose(_posed(bpy, column, 10), expected, atol=1e-5 * scale)


def test_apply_modifiers_exports_the_evaluated_mesh_or_the_base_one(blender, tmp_path):
    bpy = blender
    obj = _plane(bpy, "Arrayed")
    obj.modifiers.new("Array", "ARRAY").count = 3
    base = len(obj.data.polygons) * 2  # a grid's quads, two triangles each
    out = tmp_path / "out.ms3d"
    assert bpy.ops.export_scene.ms3d(filepath=str(out)) == {"FINISHED"}  # on by default
    assert len(read_ms3d(out).triangles) == 3 * base
    assert bpy.ops.export_scene.ms3d(filepath=str(out), apply_modifiers=False) == {"FINISHED"}
    assert len(read_ms3d(out).triangles) == base
    assert [m.type for m in obj.modifiers] == ["ARRAY"]  # the scene is left as it was


def test_the_operator_is_in_file_export_with_presets(blender):
    from io_ms3d_mdl.blender.ms3d_export import EXPORT_SCENE_OT_ms3d, menu_export

    assert menu_export in blender.types.TOPBAR_MT_file_export._dyn_ui_initialize()
    assert "PRESET" in EXPORT_SCENE_OT_ms3d.bl_options  # Blender's Operator Presets menu on top of the options
    names = set(EXPORT_SCENE_OT_ms3d.__annotations__)
    assert {"use_selection", "scale", "axis_forward", "axis_up", "apply_modifiers", "animation"} <= names
