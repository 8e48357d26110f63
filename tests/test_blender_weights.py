"""Vertex-group weights: groups with many distinct weights go through Blender's "Convert Attribute" operator, the
rest through ``VertexGroup.add``; both ways must build the same thing, on the imported mesh only."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import sample_path

pytestmark = pytest.mark.blender

NAMES = ["root", "position", "UVMap", "io_ms3d_mdl weights", "", "é" * 31, "sharp_face", "b7", "b8"]


def grid(bpy, name="skin", side=40):
    """A mesh with a UV map and its own attributes, as imported meshes have them."""
    verts = [(x, y, 0.0) for y in range(side) for x in range(side)]
    faces = [
        (y * side + x, y * side + x + 1, (y + 1) * side + x + 1, (y + 1) * side + x)
        for y in range(side - 1)
        for x in range(side - 1)
    ]
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(verts, [], faces)
    mesh.uv_layers.new(name="UVMap")
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def hostile_skin(count: int, seed: int = 0):
    """Free float weights (so many distinct ones per bone), plus the corners: zero, negative and over-one weights,
    a vertex named twice for one bone, a bone whose only weights are zero, and unweighted vertices."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 6, (count, 3))
    weights = rng.random((count, 3)).astype(np.float32)
    weights[::7, 0] = 0.0
    weights[::11, 1] = -0.25
    weights[::13, 2] = 1.5
    ids[::5, 1] = ids[::5, 0]  # the same bone twice on one vertex
    weights[::10, 1] = 0.0
    ids[::17] = -1
    ids[3], weights[3] = (8, 8, -1), (0.0, 0.0, 0.0)  # bone 8: zero weights only
    ids[4], weights[4] = (7, 7, 8), (0.0, 0.5, 0.0)  # zero then a weight for one bone
    ids[5], weights[5] = (9, 2, -3), (1.0, -0.0, 1.0)  # naming no bone; -0.0
    return ids, weights


def reference(obj, names, ids, weights):
    """The plain way: every influence added on its own, bone by bone, each bone's in ascending weight order."""
    influences = sorted(
        (bone, weight, vertex)
        for vertex, (row, row_weights) in enumerate(zip(ids.tolist(), weights.tolist(), strict=True))
        for bone, weight in zip(row, row_weights, strict=True)
        if 0 <= bone < len(names)
    )
    groups = {}
    for bone, weight, vertex in influences:
        if bone not in groups:
            groups[bone] = obj.vertex_groups.new(name=names[bone])
        groups[bone].add([vertex], weight, "REPLACE")


def built(obj):
    mesh = obj.data
    return {
        "groups": [(g.index, g.name) for g in obj.vertex_groups],
        "active group": obj.vertex_groups.active_index,
        "weights": [[(g.group, g.weight) for g in v.groups] for v in mesh.vertices],
        "attributes": [(a.name, a.domain, a.data_type) for a in mesh.attributes],
        "active attribute": mesh.attributes.active_index,
        "active uv": mesh.uv_layers.active_index,
    }


def fill(monkeypatch, way: str, obj, names, skin):
    from io_ms3d_mdl.blender import weights

    monkeypatch.setattr(weights, "CONVERT_US", math.inf if way == "add" else -math.inf)
    weights.fill_groups(obj, names, *skin)
    monkeypatch.undo()


def test_converted_groups_equal_added_groups_with_every_corner_case(blender, monkeypatch):
    bpy = blender
    skin = hostile_skin(1600)
    plain, added, converted = grid(bpy, "plain"), grid(bpy, "added"), grid(bpy, "converted")
    reference(plain, NAMES, *skin)
    fill(monkeypatch, "add", added, NAMES, skin)
    fill(monkeypatch, "convert", converted, NAMES, skin)
    a, c = built(added), built(converted)
    assert a == built(plain) and c == a
    named = ["root", "position", "UVMap", "io_ms3d_mdl weights", "Group", "é" * 31, "b7", "b8"]  # "" → "Group"
    assert [name for _, name in a["groups"]] == named
    assert a["active group"] == 7
    weights = [w for v in a["weights"] for _, w in v]
    assert 0.0 in weights and 1.0 in weights and min(weights) == 0.0 and max(weights) == 1.0
    assert a["weights"][3] == [(7, 0.0)] and a["weights"][4] == [(6, 0.5), (7, 0.0)]


def test_the_conversion_works_on_the_mesh_it_was_given_whatever_the_context_names(blender, monkeypatch):
    """A script may run the import under a context naming another object; that object is never touched."""
    bpy = blender
    mine, target = grid(bpy, "mine", 10), grid(bpy, "target")
    mine.data.attributes.new("mine", "FLOAT", "POINT")
    bpy.context.view_layer.objects.active = mine
    before = built(mine)
    skin = hostile_skin(1600)
    with bpy.context.temp_override(object=mine, active_object=mine):
        fill(monkeypatch, "convert", target, NAMES, skin)
    assert built(mine) == before and not mine.vertex_groups
    assert len(target.vertex_groups) == 8
    assert bpy.context.view_layer.objects.active == mine


def test_a_refused_conversion_falls_back_to_adding_and_leaves_no_trace(blender, monkeypatch):
    from io_ms3d_mdl.blender import weights

    bpy = blender
    skin = hostile_skin(1600)
    added, refused = grid(bpy, "added"), grid(bpy, "refused")
    fill(monkeypatch, "add", added, NAMES, skin)
    calls = []

    def refuse(idname, **props):
        calls.append(idname)
        raise RuntimeError("Operator bpy.ops.geometry.attribute_convert.poll() failed, context is incorrect")

    monkeypatch.setattr(weights, "run_operator", refuse)
    monkeypatch.setattr(weights, "CONVERT_US", -math.inf)
    weights.fill_groups(refused, NAMES, *skin)
    assert calls == ["geometry.attribute_convert"]  # asked once, then every group is added
    assert built(refused) == built(added)


def test_civilian_converts_its_many_weight_groups_and_gets_the_same_weights(blender, monkeypatch):
    """civilian.mdl's body and head carry hundreds of distinct weights per bone: those 28 groups are converted, as
    are 2 of the hands' 36 (476 vertices, 30 or more distinct weights); the rest, and the money's 4, are added. Every
    mesh ends up as the add-only import builds it."""
    from io_ms3d_mdl.blender import weights

    bpy = blender
    mdl = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    calls = []
    real = weights.run_operator
    monkeypatch.setattr(weights, "run_operator", lambda idname, **p: calls.append(idname) or real(idname, **p))
    bpy.ops.import_scene.source_mdl(filepath=str(mdl), animations="NONE")
    converted = {o.name: built(o) for o in bpy.data.objects if o.type == "MESH" and o.vertex_groups}
    assert len(calls) == 30
    bpy.ops.wm.read_factory_settings(use_empty=True)
    monkeypatch.setattr(weights, "CONVERT_US", math.inf)
    bpy.ops.import_scene.source_mdl(filepath=str(mdl), animations="NONE")
    added = {o.name: built(o) for o in bpy.data.objects if o.type == "MESH" and o.vertex_groups}
    assert len(calls) == 30 and converted == added


def test_nan_weights_count_as_zero_on_both_ways(blender, monkeypatch):
    """The finite guard zeroes NaN before any build; should one reach the builder, it is a zero weight, not a key
    that sorts among other bones."""
    bpy = blender
    ids = np.array([[0, 1], [1, 0], [0, -1], [1, -1]])
    weights = np.array([[np.nan, 0.5], [0.25, -np.nan], [1.0, 0.0], [0.75, 0.0]], np.float32)
    added, converted = grid(bpy, "added", 2), grid(bpy, "converted", 2)
    fill(monkeypatch, "add", added, ["a", "b"], (ids, weights))
    fill(monkeypatch, "convert", converted, ["a", "b"], (ids, weights))
    a = built(added)
    assert a == built(converted)
    assert a["groups"] == [(0, "a"), (1, "b")]
    assert a["weights"] == [[(0, 0.0), (1, 0.5)], [(0, 0.0), (1, 0.25)], [(0, 1.0)], [(1, 0.75)]]


def test_bones_named_like_every_temporary_name_are_added(blender, monkeypatch):
    """The temporary attribute's name avoids every bone's; past Blender's 63 bytes it could not be found again,
    so then nothing is converted."""
    bpy = blender
    names = ["io_ms3d_mdl weights" + "_" * i for i in range(45)]
    rng = np.random.default_rng(1)
    ids = rng.integers(0, len(names), (1600, 2))
    weights = rng.random((1600, 2)).astype(np.float32)
    added, converted = grid(bpy, "added"), grid(bpy, "converted")
    fill(monkeypatch, "add", added, names, (ids, weights))
    fill(monkeypatch, "convert", converted, names, (ids, weights))
    assert built(converted) == built(added)
    assert [g.name for g in converted.vertex_groups] == names
