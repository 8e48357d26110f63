"""Models imported from archives and games in Blender: the real L4D2 add-on VPK (both models, the view model
textured from the VPK's own VMT and VTF), a model inside a GMA, and a mod whose materials exist only in its base
game's VPK."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from archive_writer import GEntry, write_gma
from source_writer import character_spec, write_source
from test_archives import KNIFE, needs_knife
from test_games import base_game

from io_ms3d_mdl import access
from io_ms3d_mdl.filesystem import mounts

pytestmark = pytest.mark.blender


def images(bpy, obj) -> list:
    return [
        n.image
        for slot in obj.material_slots
        if slot.material and slot.material.node_tree
        for n in slot.material.node_tree.nodes
        if n.bl_idname == "ShaderNodeTexImage" and n.image is not None
    ]


def meshes(bpy) -> list:
    return [o for o in bpy.data.objects if o.type == "MESH" and "source_phy_solid" not in o]


@needs_knife
def test_both_models_of_the_real_vpk_import_the_view_model_textured(blender):
    bpy = blender
    view = os.path.join(str(KNIFE), "models", "v_models", "v_knife_t.mdl")
    assert bpy.ops.import_scene.source_mdl(filepath=view) == {"FINISHED"}
    (mesh,) = meshes(bpy)
    assert len(mesh.data.polygons) == 1806 and len(mesh.data.vertices) == 1631
    (image,) = images(bpy, mesh)[:1]
    assert tuple(image.size) == (512, 256) and image.packed_file is not None
    assert mesh.material_slots[0].material.get("source_missing") is None
    bpy.ops.wm.read_factory_settings(use_empty=True)
    world = os.path.join(str(KNIFE), "models", "w_models", "weapons", "w_knife_t.mdl")
    assert bpy.ops.import_scene.source_mdl(filepath=world) == {"FINISHED"}
    (mesh,) = meshes(bpy)
    assert len(mesh.data.polygons) == 186
    assert mesh.material_slots[0].material["source_missing"]  # its material ships with the game, not the add-on
    assert any("source_phy_solid" in o for o in bpy.data.objects)  # the .phy came from the VPK too


def test_a_model_inside_a_gma_imports(blender, tmp_path):
    bpy = blender
    loose = tmp_path / "loose"
    write_source(character_spec(includes=[]), loose / "models" / "test", "guy")
    files = [GEntry(p.relative_to(loose).as_posix(), p.read_bytes()) for p in sorted(loose.rglob("*")) if p.is_file()]
    gma = write_gma(tmp_path / "addons" / "guy.gma", files)
    (entry,) = mounts.list_models([str(gma)])
    assert bpy.ops.import_scene.source_mdl(filepath=entry.path) == {"FINISHED"}
    assert bpy.data.collections["guy"] and bpy.data.objects["guy"].type == "ARMATURE"
    assert {o.name for o in meshes(bpy)} >= {"body_ref", "hat_ref"}


def test_a_mod_imports_textured_from_its_base_games_vpk(blender, tmp_path):
    bpy = blender
    access.clear_cache()
    _mod, model = base_game(tmp_path)
    assert bpy.ops.import_scene.source_mdl(filepath=str(model)) == {"FINISHED"}
    body = bpy.data.objects["body_ref"]
    (image,) = images(bpy, body)[:1]
    assert tuple(image.size) == (8, 8)
    pixel = list(image.pixels[:4])
    assert pixel == pytest.approx([10 / 255, 200 / 255, 30 / 255, 1.0], abs=0.01)


def test_a_model_missing_from_an_archive_fails_cleanly(blender, tmp_path):
    bpy = blender
    gma = write_gma(tmp_path / "x.gma", [GEntry("models/a.txt", b"x")])
    before = len(bpy.data.objects)
    with pytest.raises(RuntimeError, match="holds no entry"):
        bpy.ops.import_scene.source_mdl(filepath=str(Path(gma) / "models" / "none.mdl"))
    assert len(bpy.data.objects) == before
