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
    assert [c.name for c in heads.children][:2] == ["heads: grunthead", "heads: commanderhead"]
    assert visible(bpy, heads.children[0]) and not visible(bpy, heads.children[1])
    assert bpy.ops.io_ms3d_mdl.source_body_part(model="hgrunt", body_part=1, option=1) == {"FINISHED"}
    assert visible(bpy, heads.children[1]) and not visible(bpy, heads.children[0])
    assert source_switch.body_number(model) == int(heads["source_bodypart_base"])
    body = bpy.data.objects["gruntbody"]
    before = [s.material.name if s.material else "" for s in body.material_slots]
    assert bpy.ops.io_ms3d_mdl.source_skin(model="hgrunt", family=1) == {"FINISHED"}
    after = [s.material.name if s.material else "" for s in body.material_slots]
    assert model["source_skin"] == 1 and before != after


def test_bone_controllers_are_listed_on_the_model(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(
        filepath=str(goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl"))
    )
    controllers = bpy.data.collections["scientist"]["source_bone_controllers"]
    assert len(controllers) == 2 and all(c["bone"] for c in controllers)


def test_houndeye_skin_families_change_only_the_eye(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/houndeye.mdl")))
    skins = [list(f) for f in bpy.data.collections["houndeye"]["source_skins"]]
    assert len(skins) == 3
    differ = [i for i in range(len(skins[0])) if len({f[i] for f in skins}) > 1]
    assert len(differ) == 1 and {f[differ[0]] for f in skins} == {"eye", "eye1", "eye2"}


def test_all_sequences_blends_and_events(blender):
    bpy = blender
    path = goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    actions = {a["source_animation"]: a for a in bpy.data.actions if "source_animation" in a}
    assert len(actions) == len(bpy.data.collections["scientist"].io_ms3d_mdl_animations) == 129
    walk = actions["walk"]
    assert [m.frame for m in walk.pose_markers] and all(m.name.split()[0].isdigit() for m in walk.pose_markers)
    assert walk["source_looping"] and walk["source_frames"] == 17
    # a sequence from a group file (scientist01.mdl…) is there too
    assert all(isinstance(a.frame_range[1], float) for a in actions.values())


def test_multi_blend_sequences_become_one_action_per_blend(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/hgrunt.mdl")), animations="ALL")
    blends = [a for a in bpy.data.actions if a.get("source_blend", 0) > 0]
    assert blends
    for action in blends:
        first = bpy.data.actions.get(action["source_sequence"])
        assert first is not None and first["source_blend"] == 0


def test_in_place_sequences_keep_the_motion_bone_still(blender):
    bpy = blender
    from io_ms3d_mdl.formats.goldsrc import read_goldsrc

    path = goldsrc("phoenixprojectsoftware__halflifeclassic/models/scientist.mdl")
    gs = read_goldsrc(path)
    index, seq = next((i, s) for i, s in enumerate(gs.sequences) if s.motiontype & 1 and s.seqgroup == 0)
    bpy.ops.import_scene.source_mdl(filepath=str(path), animations="NONE")
    model = bpy.data.collections["scientist"]
    assert bpy.ops.io_ms3d_mdl.source_play_animation(model="scientist", animation=seq.label) == {"FINISHED"}
    arm = next(o for o in model.all_objects if o.type == "ARMATURE")
    bone = arm.pose.bones[gs.bone_names[seq.motionbone]]
    assert gs.bones["parent"][seq.motionbone] == -1 and index >= 0
    xs = []
    for frame in range(seq.numframes):
        bpy.context.scene.frame_set(frame)
        xs.append(bone.head[0])  # armature space: the model's space, X zeroed as the engine plays it
    assert np.abs(xs).max() < 1e-5


def test_animation_list_builds_on_demand(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/houndeye.mdl")))
    model = bpy.data.collections["houndeye"]
    built = [a for a in bpy.data.actions if "source_animation" in a]
    assert len(built) == 1  # the first sequence only
    name = model.io_ms3d_mdl_animations[5].name
    assert bpy.ops.io_ms3d_mdl.source_play_animation(model="houndeye", animation=name) == {"FINISHED"}
    arm = next(o for o in model.all_objects if o.type == "ARMATURE")
    assert arm.animation_data.action["source_animation"] == name


def test_materials_follow_texture_flags(blender):
    bpy = blender
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/v_gauss.mdl")))
    bright = bpy.data.materials["spinnerBRIGHT"]
    assert bright.node_tree.nodes["Principled BSDF"].inputs["Emission Strength"].default_value == 1.0
    chrome = [m for m in bpy.data.materials if m.get("source_texture_flags", 0) & 2]
    assert chrome and all(any(n.bl_idname == "ShaderNodeTexCoord" for n in m.node_tree.nodes) for m in chrome)
    masked = [m for m in bpy.data.materials if m.get("source_texture_flags", 0) & 64]
    assert masked and all(any(n.label == "Alpha Test" for n in m.node_tree.nodes) for m in masked)
    bpy.ops.import_scene.source_mdl(filepath=str(goldsrc("Pi0h1__halflife/models/sr666mdl/martini.mdl")))
    additive = next(m for m in bpy.data.materials if m.get("source_texture_flags", 0) & 32)
    assert any(n.label == "Additive" for n in additive.node_tree.nodes)
    assert additive.surface_render_method == "BLENDED"


def test_failed_goldsrc_import_leaves_the_file_as_it_was(blender, tmp_path):
    bpy = blender
    from conftest import datablock_counts

    path = tmp_path / "broken.mdl"
    data = bytearray(goldsrc("Pi0h1__halflife/models/houndeye.mdl").read_bytes())
    path.write_bytes(bytes(data[: len(data) // 3]))
    before = datablock_counts()
    with pytest.raises(RuntimeError, match="past the end"):
        bpy.ops.import_scene.source_mdl(filepath=str(path))
    assert datablock_counts() == before
