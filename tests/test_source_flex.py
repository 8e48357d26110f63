"""Flexes as shape keys (scout.mdl: 42 descriptors over 139 mesh flexes, 6 stereo) and their driver rules."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bpy, samples_dir

from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_vtx, read_vvd
from io_ms3d_mdl.formats.source.model import MdlFile
from io_ms3d_mdl.scene.source.convert import INCH, SourceOptions, source_to_scene
from io_ms3d_mdl.scene.source.flex import rule_expression

SCOUT = "source/GoodFishMan__mercenaries/models/player/scout.mdl"


def scout():
    path = samples_dir() / SCOUT
    sidecars = find_sidecars(str(path))
    mdl = read_mdl(path)
    return mdl, source_to_scene(mdl, read_vvd(sidecars.vvd), read_vtx(sidecars.vtx), SourceOptions())


def test_scout_flexes_become_shape_keys():
    mdl, scene = scout()
    flexes = [f for bp in mdl.body_parts for m in bp.models for me in m.meshes for f in me.flexes]
    assert (len(mdl.flex_names), len(flexes), sum(f.pair != 0 for f in flexes)) == (42, 139, 6)
    (obj,) = scene.objects
    names = [name for name, _ in obj.mesh.shape_keys]
    used = {f.desc for f in flexes} | {f.pair for f in flexes if f.pair}
    assert len(names) == len(used) == 38 and set(names) == {mdl.flex_names[d] for d in used}
    # every key: the base plus, per vertex, each flex's delta times its share (stereo: 1 - side for the
    # descriptor, side for its pair), summed over all the model's meshes; worked out here vertex by vertex
    keys = dict(obj.mesh.shape_keys)
    stereo_names = {mdl.flex_names[f.desc] for f in flexes if f.pair} | {
        mdl.flex_names[f.pair] for f in flexes if f.pair
    }
    row_of = {int(v): r for r, v in enumerate(obj.mesh.source_vertices)}
    for name in sorted(stereo_names)[:2] + [n for n in names if n not in stereo_names][:2]:
        desc = mdl.flex_names.index(name)
        expected = {}
        for me in model_meshes(mdl):
            base = mdl.body_parts[0].models[0].vertex_index + me.vertex_offset
            for f in me.flexes:
                for index, delta, side in zip(f.indices, f.deltas, f.sides, strict=True):
                    share = (1.0 - side if f.pair else 1.0) if f.desc == desc else (side if f.pair == desc else 0.0)
                    if share:
                        row = row_of[int(base + index)]
                        expected[row] = expected.get(row, 0) + delta.astype(np.float64) * share
        rows = np.array(sorted(expected))
        got = keys[name][rows] - obj.mesh.positions[rows]
        np.testing.assert_allclose(got, np.array([expected[r] for r in rows]) * INCH, atol=1e-6)
        untouched = np.setdiff1d(np.arange(len(obj.mesh.positions)), rows)
        np.testing.assert_allclose(keys[name][untouched], obj.mesh.positions[untouched], atol=1e-7)


def model_meshes(mdl):
    return mdl.body_parts[0].models[0].meshes


def test_rule_expressions():
    fake = MdlFile.__new__(MdlFile)
    fake.flex_controllers = [("open", "", 0.0, 1.0), ("smile", "", -1.0, 1.0)]
    fake.flex_names = ["a", "b"]
    controllers = {"c0": ("controller", 0), "c1": ("controller", 1)}
    assert rule_expression([(2, 0), (1, 0.5), (6, 0)], fake) == ("c0*0.5", {"c0": ("controller", 0)})
    assert rule_expression([(2, 0), (2, 1), (13, 0), (8, 0)], fake) == ("-max(c0,c1)", controllers)
    # n-way: 0 outside 0..1, rising to 1 at 0.25, falling from 0.5; the ramp's controller (1) times controller 0
    nway = [(1, 0.0), (1, 0.25), (1, 0.5), (1, 1.0), (1, 1), (17, 0)]
    assert rule_expression(nway, fake) == ("clamp(min(c1/0.25,(1-c1)/0.5),0,1)*c0", controllers)
    assert rule_expression([(2, 9)], fake) == ("0", {})  # no such controller: the engine skips the op
    # (c0 * c0) / (c0 + c1): the engine divides only by more than 0.0001, else 0 — never 0/0
    expression, variables = rule_expression([(2, 0), (2, 0), (6, 0), (2, 0), (2, 1), (4, 0), (7, 0)], fake)
    assert variables == controllers
    assert eval(expression, {}, {"c0": 0.0, "c1": 0.0}) == 0.0
    assert eval(expression, {}, {"c0": 0.5, "c1": 0.5}) == 0.25
    assert eval(expression, {}, {"c0": 0.00005, "c1": 0.0}) == 0.0


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_scout_in_blender(addon):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.import_scene.source_mdl(filepath=str(samples_dir() / SCOUT))
    obj = next(o for o in bpy.data.objects if o.type == "MESH" and o.data.shape_keys)  # not a collision solid
    blocks = obj.data.shape_keys.key_blocks
    assert len(blocks) == 39 and blocks[0].name == "Basis"
    assert all(
        b.value == 0.0
        for b in blocks[1:]
        if not (
            obj.data.shape_keys.animation_data
            and any(d.data_path == f'key_blocks["{b.name}"].value' for d in obj.data.shape_keys.animation_data.drivers)
        )
    )
    drivers = obj.data.shape_keys.animation_data.drivers
    assert len(drivers) > 30
    assert all(d.driver.is_valid and d.driver.is_simple_expression for d in drivers)  # no Python, no 0/0
    driven = blocks["CloseLidUpL"]
    before = driven.value
    obj["flex:multi_CloseLid"] = 1.0  # controllers are properties under the "flex:" prefix
    obj.update_tag()  # assigning a custom property from Python does not tag the depsgraph (the UI does)
    bpy.context.view_layer.update()
    assert driven.value != before  # the controller drives the key
    eyes = [o for o in bpy.data.objects if o.type == "EMPTY" and o.empty_display_type == "SPHERE"]
    assert len(eyes) == 2 and all(e.parent_type == "BONE" for e in eyes)


def test_a_back_faces_vertex_copies_move_with_their_vertex():
    """The import gives a double-sided triangle's back face copies of its vertices (``used`` then repeats their
    VVD indices after the sorted ones): each copy takes its vertex's flex offset."""
    from types import SimpleNamespace

    from io_ms3d_mdl.scene.source.flex import add_shape_keys
    from io_ms3d_mdl.scene.types import MeshData, ObjectData

    flex = SimpleNamespace(
        desc=0, pair=0, indices=np.array([1, 2]), sides=np.zeros(2, np.float32), deltas=np.array([[0, 0, 1.0]] * 2)
    )
    model = SimpleNamespace(vertex_index=10, meshes=[SimpleNamespace(vertex_offset=0, flexes=[flex])])
    mdl = SimpleNamespace(flex_names=["smile"], flex_controllers=[], flex_rules=[])
    used = np.array([10, 11, 12, 10, 11, 12])  # three pool vertices, then the back face's copies of them
    positions = np.repeat(np.arange(3, dtype=np.float32)[:, None], 3, axis=1)[[0, 1, 2, 0, 1, 2]]
    obj = ObjectData("flap", MeshData("flap", positions, np.array([[0, 1, 2], [3, 5, 4]])))
    add_shape_keys(mdl, model, obj, used, 2.0)
    ((name, moved),) = obj.mesh.shape_keys
    assert name == "smile"
    np.testing.assert_array_equal(moved[:, 2] - positions[:, 2], [0, 2, 2, 0, 2, 2])
