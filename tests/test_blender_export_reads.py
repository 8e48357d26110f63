"""The export's bulk reads of a Blender mesh (``blender/scene_reader.py``) against the plain per-vertex way: each
vertex's largest weights, read through the weight tree whatever the bone names hold."""

from __future__ import annotations

import numpy as np
import pytest

pytestmark = pytest.mark.blender


def _plain_top(weights: np.ndarray, bone_of_row: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Per vertex: the positive weights, larger first, equal ones by row."""
    nv = weights.shape[1]
    ids, top = np.full((nv, keep), -1, np.int32), np.zeros((nv, keep), np.float32)
    for v in range(nv):
        found = sorted((-float(weights[r, v]), r) for r in range(weights.shape[0]) if weights[r, v] > 0)[:keep]
        for slot, (w, r) in enumerate(found):
            ids[v, slot], top[v, slot] = bone_of_row[r], -w
    return ids, top


@pytest.mark.parametrize("groups", [9, 8, 3])  # past DENSE_SLOTS (one sort), at it and below (slot by slot)
def test_top_weights_equal_a_per_vertex_sort_with_ties_and_hostile_values(addon, groups):
    from io_ms3d_mdl.blender.scene_reader import DENSE_SLOTS, MAX_READ_INFLUENCES, top_weights

    assert DENSE_SLOTS == 8
    rng = np.random.default_rng(3)
    rows, nv = 9, 700
    weights = rng.choice(np.float32([0, 0, 0, 0.25, 0.5, 0.5, 1.0]), (rows, nv)).astype(np.float32)
    weights[:, ::3] = rng.random((rows, len(range(0, nv, 3)))).astype(np.float32)  # distinct weights
    weights[2, ::5] = -0.5
    weights[3, ::7] = np.nan
    weights[4, ::11] = np.inf
    weights[5, ::13] = -0.0
    weights[6, ::17] = np.float32(1e-45)  # the smallest positive float
    weights[:, 10] = 0.5  # nine equal weights on one vertex: bone order decides, five kept
    weights[:, 11] = 0.0  # a vertex with none
    weights = weights[:groups]  # (at most that many weights a vertex)
    bone_of_row = np.array([0, 2, 3, 5, 8, 13, 21, 34, 55][:groups], np.int32)
    rows, vertices = np.nonzero(weights > 0)  # (row by row)
    skin = top_weights(rows, vertices, weights[rows, vertices], bone_of_row, nv)
    ids, top = _plain_top(weights, bone_of_row, MAX_READ_INFLUENCES)
    np.testing.assert_array_equal(skin.bone_indices, ids)
    assert skin.weights.tobytes() == top.tobytes()
    assert ids[10].tolist() == [0, 2, 3, 5, 8][:groups] + [-1] * (5 - groups) and ids[11].tolist() == [-1] * 5
    assert top_weights(*np.nonzero(np.zeros((3, 5)) > 0), np.zeros(0, np.float32), bone_of_row[:3], 5) is None


# Names the weight tree must find its groups by: as long as Blender allows (63 bytes), multi-byte characters,
# control characters (the tree pads names with one that none of them has), and names that end in spaces.
ODD_NAMES = ["é" * 31, "x" * 63, "\x01\x02pad", "a b ", "🦴", "B|C", "short", "Bone.001"]


def test_weights_come_back_through_the_tree_whatever_the_bone_names(blender):
    from io_ms3d_mdl.blender.scene_reader import MAX_READ_INFLUENCES, read_scene

    bpy = blender
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    bpy.ops.object.mode_set(mode="EDIT")
    for bone in list(rig.data.edit_bones):
        rig.data.edit_bones.remove(bone)
    for i, name in enumerate(ODD_NAMES):
        bone = rig.data.edit_bones.new(name)
        bone.head, bone.tail = (i, 0, 0), (i, 0, 1)
    bpy.ops.object.mode_set(mode="OBJECT")
    assert [b.name for b in rig.data.bones] == ODD_NAMES
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=12, y_subdivisions=12)
    obj = bpy.context.object
    nv = len(obj.data.vertices)
    rng = np.random.default_rng(5)
    expected = np.zeros((len(ODD_NAMES), nv), np.float32)
    for row, name in enumerate(ODD_NAMES):
        group = obj.vertex_groups.new(name=name)
        for v in np.flatnonzero(rng.random(nv) < 0.5).tolist():
            weight = float(rng.choice([0.25, 0.5, rng.random()]))
            group.add([v], weight, "REPLACE")
            expected[row, v] = group.weight(v)
    obj.modifiers.new("Armature", "ARMATURE").object = rig
    skin = read_scene(bpy.context).objects[0].skin
    ids, top = _plain_top(expected, np.arange(len(ODD_NAMES), dtype=np.int32), MAX_READ_INFLUENCES)
    np.testing.assert_array_equal(skin.bone_indices, ids)
    assert skin.weights.tobytes() == top.tobytes()
    assert not any(g.name.startswith("io_ms3d_mdl") for g in bpy.data.node_groups)


def _blender_triangles(me) -> tuple[np.ndarray, np.ndarray]:
    me.calc_loop_triangles()
    loops = np.empty(len(me.loop_triangles) * 3, np.int32)
    me.loop_triangles.foreach_get("loops", loops)
    faces = np.empty(len(me.loop_triangles), np.int32)
    me.loop_triangle_polygons.foreach_get("value", faces)
    return loops.reshape(-1, 3), faces


@pytest.mark.parametrize("extra", ["none", "degenerate quad", "ngon"])
def test_triangles_are_blenders_own_for_folded_flat_and_concave_quads(blender, monkeypatch, extra):
    """Random bent quads (most fold along 0-2, and Blender cuts those along 1-3), flat and concave ones, one
    that folds while flat, and triangles: the corners made here are the ones Blender reads back, in its order.
    With a face of more than four corners, or a quad on the edge of folding, they are read from Blender."""
    from io_ms3d_mdl.blender import scene_reader

    bpy = blender
    rng = np.random.default_rng(11)
    verts = rng.normal(size=(4 * 400, 3)).tolist()
    faces = [tuple(range(4 * i, 4 * i + 4)) for i in range(400)]
    faces += [(0, 1, 2), (5, 6, 7)]
    shapes = [
        [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0)],  # flat
        [(0, 0, 0), (1, 0, 0), (0.2, 0.2, 0), (0, 1, 0)],  # concave at its third corner
        [(0, 0, 0), (0.8, 0.8, 0), (1, 0, 0), (1, 1, 0)],  # concave at its second: cut along 1-3
    ]
    if extra == "degenerate quad":
        shapes.append([(0, 0, 0), (1, 0, 0), (2, 0, 0), (3, 0, 0)])
    elif extra == "ngon":
        shapes.append(rng.normal(size=(6, 3)).tolist())
    for shape in shapes:
        faces.append(tuple(range(len(verts), len(verts) + len(shape))))
        verts += shape
    mesh = bpy.data.meshes.new("quads")
    mesh.from_pydata(verts, [], faces)
    positions = np.array(verts, np.float32)
    corner_verts = np.empty(len(mesh.loops), np.int32)
    mesh.attributes[".corner_vert"].data.foreach_get("value", corner_verts)
    expected_loops, expected_faces = _blender_triangles(mesh)
    get, read = scene_reader._get, []
    monkeypatch.setattr(scene_reader, "_get", lambda c, attr, *rest: read.append(attr) or get(c, attr, *rest))
    loops, polygon = scene_reader._triangles(mesh, positions, corner_verts)
    np.testing.assert_array_equal(loops, expected_loops)
    np.testing.assert_array_equal(polygon, expected_faces)
    folded = ((loops[:, 1] - loops[:, 0] == 1) & (loops[:, 2] - loops[:, 0] == 3)).sum()  # cut along 1-3
    assert 100 < folded < 350  # (both cuts are made)
    assert read.count("loops") == (extra != "none")


def test_a_long_curve_sharing_its_path_and_index_with_another_reads_its_own_keys(blender):
    """The reader looks a curve of ``FIND_FROM_KEYS`` keys or more up again by path and index before reading its
    keys; two curves may share both (a script can set ``array_index``), and then the second is not the first."""
    from io_ms3d_mdl.blender.scene_reader import FIND_FROM_KEYS, _action, _curves_and_finders, _keys

    bpy = blender
    bpy.ops.object.armature_add()
    rig = bpy.context.object
    action = bpy.data.actions.new("shared path")
    if not hasattr(action, "layers"):
        pytest.skip("4.2's legacy action: no channelbag to look a curve up in")
    slot = action.slots.new(id_type="OBJECT", name="rig")
    bag = action.layers.new("layer").strips.new(type="KEYFRAME").channelbags.new(slot)
    path = 'pose.bones["Bone"].location'
    expected = []
    for index, (count, value) in enumerate([(FIND_FROM_KEYS + 8, 1.0), (FIND_FROM_KEYS + 18, 2.0)]):
        curve = bag.fcurves.new(path, index=index)
        keys = np.stack([np.arange(count), np.full(count, value)], axis=1).astype(np.float32)
        curve.keyframe_points.add(count)
        curve.keyframe_points.foreach_set("co", keys.ravel())
        expected.append(keys)
    bag.fcurves[1].array_index = 0  # both curves are location[0] now
    read = [_keys(curve, find) for curve, find in _curves_and_finders(action)]
    assert [k.tobytes() for k in read] == [k.tobytes() for k in expected]
    data = _action(action, rig, ["Bone"], {})
    np.testing.assert_array_equal(data.channels[0].location_frames, expected[1][:, 0])
    np.testing.assert_array_equal(data.channels[0].locations[:, 0], expected[1][:, 1])
