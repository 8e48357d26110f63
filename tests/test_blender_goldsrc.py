"""GoldSrc (Half-Life 1) import in Blender: every sample textured and rigged, body parts and skins switching,
actions for sequences and blends, events as markers, the animation list building on demand."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import sample_path

pytestmark = pytest.mark.blender

SAMPLES = {  # model: (mesh objects, triangles, materials, bones, sequences offered)
    "Pi0h1__halflife/models/hgrunt.mdl": (7, 1212, 34, 30, 87),
    "Pi0h1__halflife/models/houndeye.mdl": (1, 308, 10, 17, 31),
    "Pi0h1__halflife/models/v_9mmar.mdl": (1, 1104, 16, 46, 8),
    "Pi0h1__halflife/models/v_gauss.mdl": (1, 1272, 21, 47, 9),
    "Pi0h1__halflife/models/sr666mdl/martini.mdl": (1, 228, 1, 1, 1),
    "Pi0h1__halflife/models/ka_risingsun/rs_sakura_fallenpetals.mdl": (10, 84, 2, 10, 1),
    "phoenixprojectsoftware__halflifeclassic/models/islave.mdl": (1, 504, 26, 51, 30),
    "phoenixprojectsoftware__halflifeclassic/models/scientist.mdl": (6, 1351, 31, 22, 129),
    "phoenixprojectsoftware__halflifeclassic/models/v_9mmhandgun.mdl": (3, 996, 11, 48, 10),
}


def goldsrc(relative: str):
    return sample_path("goldsrc", relative)


def visible(bpy, coll) -> bool:
    from io_ms3d_mdl.blender.scene_builder import find_layer_collection

    return (
        not coll.hide_render and not find_layer_collection(bpy.context.view_layer.layer_collection, coll).hide_viewport
    )


@pytest.mark.parametrize("relative", sorted(SAMPLES))
def test_every_sample_imports_textured_and_rigged(blender, relative):
    bpy = blender
    objects, triangles, materials, bones, offered = SAMPLES[relative]
    path = goldsrc(relative)
    assert bpy.ops.import_scene.source_mdl(filepath=str(path)) == {"FINISHED"}
    model = bpy.data.collections[path.stem]
    assert model["source_version"] == 10 and model["source_engine"] == "GoldSrc"
    meshes = [o for o in model.all_objects if o.type == "MESH"]
    assert len(meshes) == objects
    assert sum(len(o.data.polygons) for o in meshes) == triangles
    assert len({s.material for o in meshes for s in o.material_slots if s.material}) <= materials
    arm = next(o for o in model.all_objects if o.type == "ARMATURE")
    assert len(arm.data.bones) == bones
    for obj in meshes:
        assert obj.parent == arm and any(m.type == "ARMATURE" for m in obj.modifiers)
        assert obj.data.uv_layers and obj.data.polygons
        for slot in obj.material_slots:
            if slot.material is None:
                continue
            image = next(n.image for n in slot.material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
            assert image.packed_file is not None and image.size[0] > 1  # embedded pixels, packed
    assert len(model.io_ms3d_mdl_animations) == offered
    assert arm.animation_data.action is not None  # the first sequence


def test_body_parts_and_skins_switch(blender):
    bpy = blender
    from io_ms3d_mdl.blender import source_switch

    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/hgrunt.mdl")))
    model = bpy.data.collections["hgrunt"]
    heads = bpy.data.collections["heads"]
    assert [c.name for c in heads.children][:2] == ["grunthead", "commanderhead"]
    assert visible(bpy, heads.children[0]) and not visible(bpy, heads.children[1])
    assert bpy.ops.io_ms3d_mdl.source_body_part(model="hgrunt", body_part=1, option=1) == {"FINISHED"}
    assert visible(bpy, heads.children[1]) and not visible(bpy, heads.children[0])
    assert source_switch.body_number(model) == int(heads["source_bodypart_base"])
    body = bpy.data.objects["gruntbody"]
    before = [s.material.name if s.material else "" for s in body.material_slots]
    assert bpy.ops.io_ms3d_mdl.source_skin(model="hgrunt", family=1) == {"FINISHED"}
    after = [s.material.name if s.material else "" for s in body.material_slots]
    assert model["source_skin"] == 1 and before != after


def test_houndeye_skin_families_change_only_the_eye(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/houndeye.mdl")))
    skins = [list(f) for f in bpy.data.collections["houndeye"]["source_skins"]]
    assert len(skins) == 3
    differ = [i for i in range(len(skins[0])) if len({f[i] for f in skins}) > 1]
    assert len(differ) == 1 and {f[differ[0]] for f in skins} == {"eye", "eye1", "eye2"}
