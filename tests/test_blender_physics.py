"""Collision solids (``.phy``) in real Blender: a hidden physics collection of wireframe meshes, each following its
bone, placed on the model."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import samples_dir
from mathutils import Matrix
from phy_writer import PhySpec, PSolid, box, solid_text, write_phy
from source_writer import character_spec, write_source

pytestmark = pytest.mark.blender

PROPS = {"pushcart01a", "metal_box", "pipe02_45degree01"}


def phy_models():
    out = []
    for phy in sorted(samples_dir().rglob("*"), key=lambda p: str(p).lower()):
        if phy.suffix.lower() == ".phy":
            mdl = next((p for p in phy.parent.iterdir() if p.name.lower() == phy.stem.lower() + ".mdl"), None)
            if mdl is not None:
                out.append((mdl, phy))
    return out


def hidden(bpy, coll) -> bool:
    from io_ms3d_mdl.blender.scene_builder import find_layer_collection

    return coll.hide_render and find_layer_collection(bpy.context.view_layer.layer_collection, coll).hide_viewport


def world_points(obj) -> np.ndarray:
    co = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    m = np.array(obj.matrix_world)
    return co.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]


def import_model(bpy, path, **options):
    result = bpy.ops.import_scene.source_mdl(
        filepath=str(path), import_animations=False, find_materials=False, **options
    )
    assert result == {"FINISHED"}
    bpy.context.view_layer.update()
    return next(c for c in bpy.data.collections if c.name.lower() == path.stem.lower())


def physics_of(model):
    found = [c for c in model.children if c.name.endswith(" physics")]
    return found[0] if found else None


def test_samples_build_hidden_wire_solids_on_their_bones(blender):
    import struct

    bpy = blender
    for mdl, phy in phy_models():
        bpy.ops.wm.read_factory_settings(use_empty=True)
        model = import_model(bpy, mdl)
        coll = physics_of(model)
        count = struct.unpack_from("<i", phy.read_bytes(), 8)[0]
        assert coll is not None and len(coll.objects) == count, mdl.name
        assert hidden(bpy, coll)
        solids = list(coll.objects)
        for obj in solids:
            assert obj.type == "MESH" and obj.display_type == "WIRE"
            assert not obj.vertex_groups and not obj.modifiers
            assert "source_phy_mass" in obj
        if count > 1:  # a ragdoll: each solid on the bone it is named after
            for obj in solids:
                assert obj.parent_type == "BONE" and obj.parent_bone == obj["source_phy_name"], obj.name
            assert sum("source_constraint_xmin" in o for o in solids) == count - 1
        meshes = [o for o in model.all_objects if o.type == "MESH" and o not in solids]
        points = np.concatenate([world_points(o) for o in meshes])
        lo, hi = points.min(axis=0), points.max(axis=0)
        margin = 0.05 * np.linalg.norm(hi - lo)
        for obj in solids:
            p = world_points(obj)
            centre = (p.min(axis=0) + p.max(axis=0)) / 2
            assert np.all(centre >= lo - margin) and np.all(centre <= hi + margin), (mdl.name, obj.name)
        if mdl.stem.lower() in PROPS:
            p = world_points(solids[0])
            error = max(np.abs(p.min(axis=0) - lo).max(), np.abs(p.max(axis=0) - hi).max())
            assert error <= 0.06 * np.linalg.norm(hi - lo), mdl.name


def test_option_off_gives_no_physics_collection(blender):
    bpy = blender
    mdl = phy_models()[0][0]
    model = import_model(bpy, mdl, import_physics=False)
    assert physics_of(model) is None
    assert not any(o.display_type == "WIRE" for o in bpy.data.objects)


def test_solids_follow_their_bone_and_the_model_turn(blender, tmp_path):
    """The spine solid, stored in the spine's space, sits on the spine; posing the spine moves it along."""
    bpy = blender
    path = write_source(character_spec(), tmp_path, "guy")
    spec = PhySpec(
        [PSolid([box((-1, -1, -1), (1, 1, 1), 0)]), PSolid([box((0, -0.5, -0.5), (2, 0.5, 0.5), 1)])],
        text=solid_text(["pelvis", "spine"], [(0, 1, {"xmin": -10, "xmax": 20})]),
    )
    (tmp_path / "guy.phy").write_bytes(write_phy(spec))
    model = import_model(bpy, path, units="SOURCE")
    spine = bpy.data.objects["spine"]
    assert spine.parent_bone == "spine" and spine["source_constraint_xmax"] == 20.0
    p = world_points(spine)
    np.testing.assert_allclose(p.min(axis=0), (-0.5, 0, 1.5), atol=1e-4)
    np.testing.assert_allclose(p.max(axis=0), (0.5, 2, 2.5), atol=1e-4)
    arm = bpy.data.objects["guy"]
    arm.pose.bones["spine"].location = (0.0, 0.0, 1.0)  # along the spine's own Z
    bpy.context.view_layer.update()
    moved = world_points(spine)
    assert not np.allclose(moved, p, atol=1e-3)
    arm.pose.bones["spine"].location = (0.0, 0.0, 0.0)
    arm.matrix_world = Matrix.Rotation(np.pi / 2, 4, "Z") @ arm.matrix_world
    bpy.context.view_layer.update()
    turned = world_points(spine)
    np.testing.assert_allclose(turned.min(axis=0), (-2, -0.5, 1.5), atol=1e-4)
    assert physics_of(model) is not None


def test_a_broken_phy_warns_and_the_model_imports(blender, tmp_path, capsys):
    bpy = blender
    path = write_source(character_spec(), tmp_path, "guy")
    (tmp_path / "guy.phy").write_bytes(b"\x10\0\0\0\0\0\0\0\xff\xff\xff\x7f\0\0\0\0" + b"\0" * 40)
    model = import_model(bpy, path)
    assert "collision model was not imported" in capsys.readouterr().out
    assert physics_of(model) is None and bpy.data.objects["body_ref"].type == "MESH"


LONG_UTF8 = "界" * 25  # 25 characters, 75 bytes of UTF-8: over Blender's 63-byte property names
LONG_ASCII = "k" * 70


def long_key_model(tmp_path):
    """Two solids whose text has keys longer than Blender keeps, two of them alike in their first 63 bytes."""
    path = write_source(character_spec(), tmp_path, "guy")
    text = solid_text(["pelvis", "spine"]).replace(
        '"name" "spine"', f'"name" "spine"\n"{LONG_UTF8}" "wide"\n"{LONG_ASCII}a" "1.5"\n"{LONG_ASCII}b" "2.5"'
    )
    text += f'editparams {{\n"{LONG_UTF8}x" "7"\n}}\n'
    spec = PhySpec(
        [PSolid([box((-1, -1, -1), (1, 1, 1), 0)]), PSolid([box((0, -0.5, -0.5), (2, 0.5, 0.5), 1)])], text=text
    )
    (tmp_path / "guy.phy").write_bytes(write_phy(spec))
    return path


def test_phy_keys_longer_than_blender_keeps_import_with_their_full_names(blender, tmp_path):
    """A key from the .phy text becomes a property name: one of 75 bytes ended in a KeyError that lost the whole
    model (red-team finding). It is shortened on a character boundary and made unique, its full name kept."""
    bpy = blender
    model = import_model(bpy, long_key_model(tmp_path))
    physics = physics_of(model)
    assert physics is not None and len(physics.objects) == 2
    spine = bpy.data.objects["spine"]
    names = {entry["source_name"]: entry["name"] for entry in spine["source_property_names"]}
    assert set(names) == {f"source_phy_{LONG_UTF8}", f"source_phy_{LONG_ASCII}a", f"source_phy_{LONG_ASCII}b"}
    assert all(len(n.encode()) <= 63 for n in names.values()) and len(set(names.values())) == 3
    assert spine[names[f"source_phy_{LONG_UTF8}"]] == "wide"
    assert {spine[names[f"source_phy_{LONG_ASCII}{s}"]] for s in "ab"} == {1.5, 2.5}
    (renamed,) = physics["source_property_names"]
    assert renamed["source_name"] == f"source_phy_{LONG_UTF8}x" and physics[renamed["name"]] == 7.0


def test_a_phy_that_breaks_the_converter_costs_only_the_collision(blender, tmp_path, capsys, monkeypatch):
    """Whatever goes wrong while converting the .phy, the model imports without its collision, with one warning."""
    from io_ms3d_mdl.scene.source import physics

    def broken(*args):
        raise KeyError("a case nobody foresaw")

    monkeypatch.setattr(physics, "_solid_props", broken)
    model = import_model(blender, long_key_model(tmp_path))
    out = capsys.readouterr().out
    assert out.count("Warning: guy.mdl: the collision model was not imported: KeyError") == 1
    assert "(1 warning)" in out
    assert physics_of(model) is None and blender.data.objects["body_ref"].type == "MESH"


def test_a_blender_failure_building_the_collision_costs_only_the_collision(blender, tmp_path, capsys, monkeypatch):
    """Blender refusing a collision solid (here a property value it cannot store) removes the solids built so far
    and their collection; the model imports with one warning, and nothing of the collision is left behind."""
    from io_ms3d_mdl.scene.source import physics

    solid_props = physics._solid_props
    monkeypatch.setattr(
        physics, "_solid_props", lambda phy, solid, keys: {**solid_props(phy, solid, keys), "source_bad": {1: 2}}
    )
    meshes = len(blender.data.meshes)
    model = import_model(blender, long_key_model(tmp_path))
    out = capsys.readouterr().out
    assert out.count("Warning: guy.mdl: the collision model was not imported") == 1 and "(1 warning)" in out
    assert physics_of(model) is None and blender.data.objects["body_ref"].type == "MESH"
    assert not [o for o in blender.data.objects if o.display_type == "WIRE"]  # no collision solid is left
    used = {o.data for o in blender.data.objects if o.type == "MESH"}
    assert set(blender.data.meshes) == used and len(blender.data.meshes) > meshes  # nor a mesh of one
