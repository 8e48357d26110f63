"""Source import in real Blender: collections per body part and option, switching, armature, attachments."""

from __future__ import annotations

import hostile
import numpy as np
import pytest
from conftest import assert_skinned_at_rest, datablock_counts, sample_names, sample_path, samples_dir
from source_writer import SBodyPart, SMesh, SModel, SourceSpec, SVertex, character_spec, write_mdl, write_source

pytestmark = pytest.mark.blender


def visible(bpy, coll) -> bool:
    from io_ms3d_mdl.blender.scene_builder import find_layer_collection

    return (
        not coll.hide_render and not find_layer_collection(bpy.context.view_layer.layer_collection, coll).hide_viewport
    )


def test_character(blender, tmp_path):
    bpy = blender
    path = write_source(character_spec(), tmp_path, "guy")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), units="SOURCE") == {"FINISHED"}
    model = bpy.data.collections["guy"]
    assert model["source_version"] == 48 and model["source_includes"][0] == "models/test\\Test_Animations.mdl"
    hat = bpy.data.collections["hat"]
    assert [c.name for c in model.children] == ["body", "hat", "guy attachments"]
    blank, hat_ref = hat.children
    assert visible(bpy, blank) and not visible(bpy, hat_ref)
    assert [o.name for o in hat_ref.objects] == ["hat_ref"]
    arm = bpy.data.objects["guy"]
    assert arm.type == "ARMATURE" and [b.name for b in arm.data.bones] == ["pelvis", "spine"]
    spine = arm.data.bones["spine"]
    np.testing.assert_allclose(spine.head_local, (0, 0, 2), atol=1e-6)
    mesh = bpy.data.objects["body_ref"]
    assert mesh.parent == arm and {g.name for g in mesh.vertex_groups} == {"pelvis", "spine"}
    assert [s.material.name for s in mesh.material_slots] == ["body", "hat"]
    eyes = bpy.data.objects["eyes"]
    assert eyes.parent_type == "BONE" and eyes.parent_bone == "spine"
    bpy.context.view_layer.update()
    np.testing.assert_allclose(eyes.matrix_world.translation, (0.0, 0.5, 2.25), atol=1e-5)


def test_switching_body_groups_and_skins(blender, tmp_path):
    bpy = blender
    from io_ms3d_mdl.blender import source_switch

    bpy.ops.import_scene.source_mdl(filepath=str(write_source(character_spec(), tmp_path, "guy")))
    model = bpy.data.collections["guy"]
    blank, hat_ref = bpy.data.collections["hat"].children
    assert source_switch.body_number(model) == 0
    assert bpy.ops.io_ms3d_mdl.source_body_part(model="guy", body_part=1, option=1) == {"FINISHED"}
    assert visible(bpy, hat_ref) and not visible(bpy, blank) and source_switch.body_number(model) == 1
    bpy.ops.io_ms3d_mdl.source_body_number(model="guy", body=0)
    assert visible(bpy, blank) and not visible(bpy, hat_ref)
    mesh = bpy.data.objects["body_ref"]
    assert bpy.ops.io_ms3d_mdl.source_skin(model="guy", family=1) == {"FINISHED"}
    assert [s.material.name for s in mesh.material_slots] == ["body_red", "hat"] and model["source_skin"] == 1
    bpy.ops.io_ms3d_mdl.source_skin(model="guy", family=0)
    assert [s.material.name for s in mesh.material_slots] == ["body", "hat"]
    with pytest.raises(RuntimeError, match="2 skin families; 5 does not exist"):
        bpy.ops.io_ms3d_mdl.source_skin(model="guy", family=5)


def test_a_double_sided_triangle_keeps_the_files_normals(blender, tmp_path):
    """A triangle and its reversed copy on the same three vertices (cremator's double-sided flaps): Blender puts
    the corners of such a closed pair in one smooth fan with opposite face normals, where no custom normal can be
    held; the back face gets copies of its vertices, and every corner shows the file's normal, as the game does."""
    bpy = blender
    tilted = np.array([(0.6, 0.0, 0.8), (0.0, 0.6, 0.8), (-0.48, -0.6, 0.64)])
    verts = [SVertex(tuple(p), tuple(n), tuple(p[:2])) for p, n in zip(np.eye(3), tilted, strict=True)]
    flap = SMesh(0, verts, [(0, 1, 2), (0, 2, 1)])
    path = write_source(SourceSpec([SBodyPart("body", [SModel("flap", [flap])])]), tmp_path, "flap")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), units="SOURCE") == {"FINISHED"}
    mesh = bpy.data.objects["flap"].data
    assert len(mesh.vertices) == 6 and len(mesh.polygons) == 2
    corners = np.array([v.vector for v in mesh.corner_normals]).reshape(-1, 3)
    expected = tilted[np.array([mesh.vertices[loop.vertex_index].co for loop in mesh.loops]).argmax(axis=1)]
    np.testing.assert_allclose(corners, expected, atol=1e-2)


def test_bodygroup_number_decodes_like_the_game(blender):
    """monster_cube: bases 1,1,2,4,8; option = (body / base) % options."""
    bpy = blender
    from io_ms3d_mdl.blender import source_switch

    path = samples_dir() / "source/Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    model = bpy.data.collections["monster_cube"]
    source_switch.set_body_number(bpy.context, model, 10)  # 10 = 2 + 8: head_02 and head_04 on
    active = [source_switch.active_option(p) for p in source_switch.body_parts(model)]
    assert active == [0, 0, 1, 0, 1] and source_switch.body_number(model) == 10


def test_lods_and_units(blender, tmp_path):
    bpy = blender
    path = write_source(character_spec(vtx_lods=2), tmp_path, "guy")
    bpy.ops.import_scene.source_mdl(filepath=str(path), all_lods=True)
    lod = bpy.data.collections["body: body_ref LOD1"]
    assert [o.name for o in lod.objects] == ["body_ref_lod1"] and not visible(bpy, lod)
    verts = bpy.data.objects["body_ref"].data.vertices
    assert verts[1].co.x == pytest.approx(0.0254)  # default: one unit is one inch


def test_missing_sidecars_and_bad_files(blender, tmp_path):
    bpy = blender
    (tmp_path / "lonely.mdl").write_bytes(write_mdl(character_spec()))
    assert bpy.ops.import_scene.source_mdl(filepath=str(tmp_path / "lonely.mdl")) == {"FINISHED"}
    assert bpy.data.objects["lonely"].type == "ARMATURE"
    bad = tmp_path / "goldsrc.mdl"
    bad.write_bytes(b"IDST" + (10).to_bytes(4, "little") + bytes(400))
    before = datablock_counts()
    with pytest.raises(RuntimeError, match=r"goldsrc\.mdl: this GoldSrc \(Half-Life 1\) model has no bones"):
        bpy.ops.import_scene.source_mdl(filepath=str(bad))
    assert datablock_counts() == before


SAMPLE_OBJECTS = {  # model: (mesh objects, vertices, bones in an armature, empties)
    "Dynamic-src__Highpoly-Src-Props/models/props_junk/pushcart01a.mdl": (1, 2407, 0, 0),
    "FJH03__CSCZS_GameData/models/shells/shell_9mm.mdl": (1, 320, 0, 0),
    "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl": (5, 11553, 19, 6),
    "GoodFishMan__mercenaries/models/player/scout.mdl": (1, 7457, 78, 29 + 2),  # attachments + eyeballs
    "Igrium__portal_nrtx/models/props/metal_box.mdl": (1, 5364, 0, 0),
    "Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl": (1, 149, 0, 0),
    "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl": (4, 5540, 59, 10),
    "Lambdagon__lambdas-weapon-pack/models/player/civilian_animations.mdl": (0, 0, 60, 0),
    "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl": (0, 0, 56, 4),
    "icewind1991__vmdl/data/barrel01.mdl": (1, 674, 0, 0),
    "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl": (1, 48, 3, 4),
    # coverage/: a v44 ragdoll, frame-major animations, Titanfall 2 (all embedded) and Titanfall
    "CombineFodder__hl2betaplayermodels/models/player/cremator.mdl": (1, 1805, 25, 5),  # 1799 + 2 back faces' own
    "NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped.mdl": (3, 10391, 47, 2),
    "Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl": (1, 24, 0, 0),
    "r1delta__CORE/models/rocks/single_rock_01.mdl": (1, 119, 0, 0),
}


def test_every_shared_source_model_imports_in_blender():
    assert sample_names("source", "*.mdl") == set(SAMPLE_OBJECTS)


@pytest.mark.parametrize("relative", sorted(SAMPLE_OBJECTS))
def test_shared_source_models_import(blender, relative):
    bpy = blender
    path = sample_path("source", relative)
    # Without animations the armature stays in its bind pose (with them, the first animation plays).
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), import_animations=False) == {"FINISHED"}
    objects = list(bpy.data.collections[path.stem].all_objects)
    meshes = [o for o in objects if o.type == "MESH" and "source_phy_solid" not in o]  # collision: test_blender_physics
    bones = sum(len(o.data.bones) for o in objects if o.type == "ARMATURE")
    empties = [o for o in objects if o.type == "EMPTY"]
    assert (len(meshes), sum(len(o.data.vertices) for o in meshes), bones, len(empties)) == SAMPLE_OBJECTS[relative]
    for obj in meshes:
        if obj.data.shape_keys:  # driven flex keys may be partly on at their controllers' defaults: skinning only
            for block in obj.data.shape_keys.key_blocks:
                block.mute = True
        if obj.modifiers:  # skinned
            assert_skinned_at_rest(obj)


def test_source_axes_rest_pose_equals_inverse_pose_to_bone(blender):
    bpy = blender
    from io_ms3d_mdl.formats.source import read_mdl

    path = samples_dir() / "source/GoodFishMan__mercenaries/models/player/scout.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), units="SOURCE", bone_orientation="SOURCE")
    mdl = read_mdl(path)
    arm = bpy.data.objects["scout"]
    for i, name in enumerate(mdl.bone_names):
        expected = np.eye(4)
        expected[:3] = mdl.bones["posetobone"][i]
        got = np.array(arm.data.bones[name].matrix_local)
        np.testing.assert_allclose(got, np.linalg.inv(expected), atol=2e-3)


@pytest.mark.parametrize(
    "module, function",
    [
        ("scene_builder", "build_mesh"),
        ("scene_builder", "build_materials"),
        ("material", "_build"),
        ("scene_builder", "build_armature"),
        ("scene_builder", "apply_skin"),
        ("scene_builder", "_shape_keys"),
        ("scene_builder", "_build_empties"),
        ("scene_builder", "build_actions"),
        ("scene_builder", "stash_actions"),
        ("material", "_image_from_pixels"),
    ],
)
def test_a_failure_at_any_source_build_stage_leaves_nothing(blender, monkeypatch, module, function):
    """Atomic imports: whatever stage fails, every datablock the import created is removed again."""
    bpy = blender
    import importlib

    target = importlib.import_module(f"io_ms3d_mdl.blender.{module}")

    def boom(*args, **kwargs):
        raise RuntimeError(f"injected failure in {function}")

    monkeypatch.setattr(target, function, boom)
    before = datablock_counts()
    path = samples_dir() / "source/GoodFishMan__mercenaries/models/player/scout.mdl"  # flexes, eyes, anims
    if function == "_image_from_pixels":
        path = samples_dir() / "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"
    with pytest.raises(RuntimeError, match=f"injected failure in {function}"):
        bpy.ops.import_scene.source_mdl(filepath=str(path))
    assert datablock_counts() == before


def test_materials_copied_from_the_first_of_their_shape_equal_fresh_builds(blender, tmp_path, monkeypatch):
    """Materials are copies of the import's first with the same node shape: each must equal a material built on its
    own (nodes, links, socket and node values, images and their user counts, settings, properties, no property
    left from the template), and be named as a new one would. Not compared: the embedded node tree's own user
    count, which Blender 4.5+ reports as 0 for any copied material during the session."""
    from io_ms3d_mdl.blender import material
    from io_ms3d_mdl.blender.material import ImageLoader, build_material, build_materials
    from io_ms3d_mdl.errors import Warnings
    from io_ms3d_mdl.scene.types import ImageRef, MaterialData

    bpy = blender
    for name in ("a", "b", "n", "m"):
        (tmp_path / f"{name}.png").write_bytes(hostile.png_1x1())

    def ref(name: str) -> ImageRef:
        return ImageRef(f"{name}.png", str(tmp_path / f"{name}.png"))

    shader = {"source_shader": "VertexLitGeneric"}
    emissive = {"emission_strength": 1.0, "base_color": (1.0, 1.0, 1.0)}
    datas = [
        MaterialData("a", (1.0, 0.0, 1.0), props={"source_missing": True, "source_texture": "a"}),
        MaterialData("taken", (0.2, 0.3, 0.4), roughness=0.1, alpha=0.5, blend=True, double_sided=True, props={}),
        MaterialData("c", (1.0, 1.0, 1.0), emission_color=(1.0, 0.5, 0.0), emission_strength=2.0, props={"k": 1}),
        MaterialData("t1", (0.5, 0.6, 0.7), base_texture=ref("a"), normal_texture=ref("n"), props=dict(shader)),
        MaterialData("t2", (0.1, 0.2, 0.3), base_texture=ref("b"), normal_texture=ref("n"), props=dict(shader)),
        MaterialData("t3", (0.1, 0.2, 0.3), base_texture=ref("b"), normal_texture=ref("missing")),
        MaterialData("t4", (1.0, 1.0, 1.0), 0.5, base_texture=ref("a"), use_texture_alpha=True, alpha_clip=0.3),
        MaterialData("t5", (1.0, 1.0, 1.0), 0.4, base_texture=ref("b"), use_texture_alpha=True, alpha_clip=0.7),
        MaterialData("t6", base_texture=ref("a"), emission_color=(0.1, 0.2, 0.3), **emissive),
        MaterialData("t7", base_texture=ref("b"), emission_color=(0.3, 0.2, 0.1), **emissive),
        MaterialData("t8", (1.0, 1.0, 1.0), alpha_texture=ref("m"), alpha=0.8),
        MaterialData("t9", (1.0, 1.0, 1.0), alpha_texture=ref("a"), alpha=0.6),
    ]

    def value(socket):
        if not hasattr(socket, "default_value"):
            return None
        # as floats: numpy 2 refuses to round a bool socket's value (numpy 1 did)
        return tuple(np.round(np.atleast_1d(socket.default_value).astype(np.float64), 6))

    def state(mat):
        tree = mat.node_tree
        nodes = sorted(
            (n.name, n.bl_idname, n.label, tuple(n.location), _image_name(n), *map(value, n.inputs)) for n in tree.nodes
        )
        links = sorted(
            (k.from_node.name, k.from_socket.identifier, k.to_node.name, k.to_socket.identifier) for k in tree.links
        )
        render = getattr(mat, "surface_render_method", "")
        return (
            nodes,
            links,
            tuple(mat.diffuse_color),
            mat.roughness,
            render,
            mat.use_backface_culling,
            dict(mat.items()),
        )

    def images():
        return sorted((i.name, i.users, i.colorspace_settings.name) for i in bpy.data.images)

    trees = []  # materials whose node trees were built node by node; the others are copies
    keep = material._Shapes.keep
    monkeypatch.setattr(
        material._Shapes,
        "keep",
        lambda self, shape, mat, nodes: trees.append(mat.name) or keep(self, shape, mat, nodes),
    )

    def build(together: bool) -> tuple[list, list]:
        trees.clear()
        bpy.ops.wm.read_factory_settings(use_empty=True)
        bpy.data.materials.new("taken")
        loader = ImageLoader(Warnings())
        made = build_materials(datas, loader) if together else [build_material(d, loader) for d in datas]
        return made, images()

    copied, copied_images = build(True)
    assert trees == ["a", "taken.001", "t1", "t3", "t4", "t6", "t8"]  # one per shape
    assert [m.name for m in copied] == ["a", "taken.001", "c", *(f"t{i}" for i in range(1, 10))]
    assert dict(copied[1].items()) == {} and dict(copied[2].items()) == {"k": 1}
    copied_states = [state(m) for m in copied]
    fresh, fresh_images = build(False)
    assert [state(m) for m in fresh] == copied_states
    assert copied_images == fresh_images


def _image_name(node) -> str | None:
    image = getattr(node, "image", None)
    return image.name if image is not None else None
