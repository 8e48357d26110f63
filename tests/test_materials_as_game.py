"""Materials as the engine shows them: an alpha channel is opacity only for $translucent/$alphatest (a mask
otherwise), missing maps leave surfaces opaque, eye shaders find their $iris, undecodable textures leave no broken
image. Checked on the node trees and with small Cycles renders of synthetic models."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import bpy
from hostile import game, source, vmt, vtf

from io_ms3d_mdl.formats.source.vtf import HEADER as VTF_HEADER

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh")

RED_MASK_ZERO = bytes([220, 30, 20, 0])  # red, with an alpha of 0 (a self-illumination mask that is "off")


def texture(tmp_path, name: str, fill: bytes, size: int = 8) -> None:
    (game(tmp_path) / "materials" / "models" / "test" / f"{name}.vtf").write_bytes(vtf(size, size, fmt=0, fill=fill))


def import_model(tmp_path) -> bpy.types.Material:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.source_mdl(filepath=str(source(tmp_path))) == {"FINISHED"}
    return bpy.data.materials["body"]


def bsdf_input(material: bpy.types.Material, name: str) -> bpy.types.NodeSocket:
    bsdf = next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeBsdfPrincipled")
    return bsdf.inputs[name]


def render_top(tmp_path) -> np.ndarray:
    """A 32² Cycles render looking down at the imported quads (lit by a sun, black world): RGB of lit pixels."""
    from mathutils import Vector

    scene = bpy.context.scene
    meshes = [o for o in bpy.data.objects if o.type == "MESH"]
    corners = [o.matrix_world @ Vector(c) for o in meshes for c in o.bound_box]
    center = sum(corners, Vector()) / len(corners)
    size = max((c - center).length for c in corners)
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    scene.camera = camera
    camera.location = center + Vector((0.0, 0.0, 3.0 * size))
    scene.world = bpy.data.worlds.new("world")
    if scene.world.node_tree is None:
        scene.world.use_nodes = True
    scene.world.node_tree.nodes["Background"].inputs[1].default_value = 0.0
    sun = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    sun.data.energy = 3.0
    scene.collection.objects.link(sun)
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples = "CPU", 2
    if hasattr(scene.cycles, "use_denoising"):
        scene.cycles.use_denoising = False
    scene.render.resolution_x = scene.render.resolution_y = 32
    scene.render.filepath = str(tmp_path / "render.png")
    bpy.ops.render.render(write_still=True)
    pixels = np.array(bpy.data.images.load(str(tmp_path / "render.png")).pixels[:]).reshape(-1, 4)[:, :3]
    return pixels[pixels.sum(axis=1) > 0.05]


def test_a_self_illumination_mask_in_alpha_does_not_darken_the_colour(addon, tmp_path):
    """Portal's turret: base alpha ≈ 0 is a $selfillum mask. The surface renders red, not black."""
    texture(tmp_path, "red", RED_MASK_ZERO)
    for name in ("body", "body_red", "hat"):  # every quad of the model
        vmt(tmp_path, name, '"VertexLitGeneric"\n{\n"$basetexture" "models/test/red"\n"$selfillum" "1"\n}\n')
    material = import_model(tmp_path)
    image = next(n.image for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    assert image.alpha_mode == "CHANNEL_PACKED"
    assert not bsdf_input(material, "Alpha").links  # not opacity
    lit = render_top(tmp_path)
    assert len(lit) > 20
    red = lit[:, 0] > 2 * np.maximum(lit[:, 1], lit[:, 2])
    assert red.mean() > 0.5, lit.mean(axis=0)


@pytest.mark.parametrize("flag", ["$translucent", "$alphatest"])
def test_alpha_is_opacity_only_where_the_shader_says_so(addon, tmp_path, flag):
    texture(tmp_path, "red", RED_MASK_ZERO)
    vmt(tmp_path, "body", f'"VertexLitGeneric"\n{{\n"$basetexture" "models/test/red"\n"{flag}" "1"\n}}\n')
    material = import_model(tmp_path)
    assert bsdf_input(material, "Alpha").links


@pytest.mark.parametrize("shader", ["EyeRefract", "Eyes"])
def test_eye_shaders_find_their_iris(addon, tmp_path, shader):
    texture(tmp_path, "eye", bytes([40, 90, 200, 255]))
    vmt(tmp_path, "body", f'"{shader}"\n{{\n"$iris" "/models/test/eye"\n}}\n')
    material = import_model(tmp_path)
    image = next(n.image for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    assert tuple(image.size) == (8, 8) and "io_ms3d_mdl_missing" not in image


def test_an_undecodable_texture_leaves_no_broken_image(addon, tmp_path, capsys):
    header = np.zeros(1, VTF_HEADER)
    header["signature"], header["version"], header["header_size"] = b"VTF\0", (7, 2), 80
    header["width"], header["height"], header["format"], header["mip_count"], header["depth"] = 8, 8, 24, 1, 1
    (game(tmp_path) / "materials" / "models" / "test" / "odd.vtf").write_bytes(header.tobytes() + bytes(256))
    vmt(tmp_path, "body", '"VertexLitGeneric"\n{\n"$basetexture" "models/test/odd"\n}\n')
    import_model(tmp_path)
    assert not [i for i in bpy.data.images if i.filepath.lower().endswith(".vtf")]  # Blender never tries to read it
    placeholder = bpy.data.images["odd.vtf"]
    assert placeholder.source == "GENERATED" and placeholder["io_ms3d_mdl_missing"]
    assert capsys.readouterr().out.count("image format 24 is not decoded") == 2  # once in the log, once shown


def test_a_missing_milkshape_alpha_map_leaves_the_surface_opaque(addon, tmp_path):
    from hostile import ms3d_textured

    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = ms3d_textured(tmp_path / "model", "", alphamap="gone.png")
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    material = bpy.data.materials["m"]
    assert not bsdf_input(material, "Alpha").links and bsdf_input(material, "Alpha").default_value == 1.0


def test_reports_count_missing_materials_apart_and_fold_repeats(addon, tmp_path, capsys):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.source_mdl(filepath=str(source(tmp_path))) == {"FINISHED"}
    out = capsys.readouterr().out
    assert "0 materials (+3 missing)" in out
    folded = [line for line in out.splitlines() if line.startswith("Warning:") and "was not found" in line]
    assert folded == [
        "Warning: model.mdl: material 'body' was not found in the model's material folders (and 2 more like it)"
    ]
    assert out.count("Info: model.mdl: material '") == 3  # the full list stays in the Info log


def test_source_axes_turn_the_whole_model(addon, tmp_path):
    """Forward -X: a character's face (Source's +X) looks down Blender's -Y, toward the Front view; rig and all."""
    from mathutils import Vector

    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = str(source(tmp_path))
    assert bpy.ops.import_scene.source_mdl(filepath=path, axis_forward="-X", axis_up="Z") == {"FINISHED"}
    armature = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    assert (armature.matrix_world.to_3x3() @ Vector((1, 0, 0)) - Vector((0, -1, 0))).length < 1e-6
    assert all(o.parent is not None or o == armature or o.type == "EMPTY" for o in bpy.data.objects)
