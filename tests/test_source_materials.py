"""Source materials: VTF decoding pixel by pixel against srctools, VMT parsing, lookup in a game tree, and the
node trees and rendering in Blender (block-compressed textures through Blender's decoder: test_vtf_dds.py)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from conftest import bpy, samples_dir

from io_ms3d_mdl.formats.source.vmt import parse_vmt
from io_ms3d_mdl.formats.source.vtf import UnsupportedTexture, read_vtf, read_vtf_bytes
from io_ms3d_mdl.scene.source.materials import Finder, source_material
from io_ms3d_mdl.scene.types import SceneData

srctools_vtf = pytest.importorskip("srctools.vtf", reason="srctools (the reference decoder) is a dev dependency")

FORMATS = [
    "DXT1",
    "DXT1_ONEBITALPHA",
    "DXT3",
    "DXT5",
    "RGBA8888",
    "ABGR8888",
    "ARGB8888",
    "BGRA8888",
    "BGRX8888",
    "RGB888",
    "BGR888",
    "RGB888_BLUESCREEN",
    "BGR888_BLUESCREEN",
    "RGB565",
    "BGR565",
    "BGRA4444",
    "BGRA5551",
    "BGRX5551",
    "I8",
    "IA88",
    "A8",
    "UV88",
]


def reference(data: bytes, **where) -> np.ndarray:
    vtf = srctools_vtf.VTF.read(io.BytesIO(data))
    frame = vtf.get(**where)
    frame.load()
    return np.frombuffer(bytes(frame._data), np.uint8).reshape(vtf.height, vtf.width, 4)


@pytest.mark.parametrize("size", [(32, 16), (2, 2)])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_matches_srctools(fmt, size):
    width, height = size
    if fmt.startswith("DXT") and size == (2, 2):
        # Images smaller than one 4×4 block: srctools writes black for them; Blender's decoder, a third one, agrees
        # with ours there (test_vtf_dds.py::test_dxt_through_blender_gives_our_pixels, sizes 2×2 and 1×1).
        pytest.skip("srctools does not decode sub-block DXT images; checked against Blender's decoder instead")
    image = np.random.default_rng(len(fmt)).integers(0, 256, (height, width, 4), dtype=np.uint8)
    vtf = srctools_vtf.VTF(width, height, fmt=getattr(srctools_vtf.ImageFormats, fmt))
    vtf.get().copy_from(image.tobytes())
    buffer = io.BytesIO()
    vtf.save(buffer)
    data = buffer.getvalue()
    np.testing.assert_array_equal(read_vtf_bytes(data).faces[0], reference(data))


def test_cube_maps_decode_every_face():
    vtf = srctools_vtf.VTF(8, 8, fmt=srctools_vtf.ImageFormats.RGBA8888, flags=srctools_vtf.VTFFlags.ENVMAP)
    sides = list(srctools_vtf.CubeSide)[:6]  # the seventh member is the old sphere map
    for i, side in enumerate(sides):
        vtf.get(side=side).copy_from(bytes([i * 40, 255 - i * 40, 7, 255]) * 64)
    buffer = io.BytesIO()
    vtf.save(buffer)
    decoded = read_vtf_bytes(buffer.getvalue())
    assert len(decoded.faces) == 6
    for i, face in enumerate(decoded.faces):
        np.testing.assert_array_equal(face, reference(buffer.getvalue(), side=sides[i]))


def test_shared_sample_textures_match_srctools():
    paths = sorted((samples_dir() / "source").rglob("*.vtf"))
    assert len(paths) == 15
    checked, bc7 = 0, 0
    for path in paths:
        data = path.read_bytes()
        try:
            expected = reference(data)
        except KeyError:  # a format srctools does not know: Strata's BC7 (70), checked against Pillow elsewhere
            image = read_vtf(path)
            assert image.format == "BC7" and image.faces[0].shape == (1024, 1024, 4)
            bc7 += 1
            continue
        np.testing.assert_array_equal(read_vtf(path).faces[0], expected)
        checked += 1
    assert (checked, bc7) == (13, 2)  # metal_box's normal and MRAO maps are format 70 (test_vtf_dds.py)


@pytest.mark.parametrize("fmt", [72, 24, 99])
def test_other_formats_are_reported_not_misdecoded(fmt):
    """Formats not decoded (72, which neither Strata nor sourcepp defines; RGBA16161616F) and unknown ids stay
    undecoded, with a reason (Strata's BC6H, 71, is decoded: test_bc6h.py)."""
    from io_ms3d_mdl.formats.source.vtf import HEADER

    header = np.zeros(1, HEADER)
    header["signature"], header["version"], header["header_size"] = b"VTF\0", (7, 2), 80
    header["width"], header["height"], header["format"], header["mip_count"], header["depth"] = 8, 8, fmt, 1, 1
    with pytest.raises(UnsupportedTexture, match=f"image format {fmt} is not decoded"):
        read_vtf_bytes(header.tobytes() + bytes(512))


VMT = b"""// a comment
"VertexLitGeneric"
{
    $baseTexture "models\\\\props/Crate01"   // bare key, mixed case
    "$bumpmap" "models/props/crate01_normal"
    "$color2" "[ .5 .25 1 ]"
    "$alphatest" 1
    "$alphatestreference" ".3"
    "$selfillum" "1"
    "$phong" "1"   "$phongexponent" "20"
    "$nocull" "1" [$X360]
    "Proxies" { "AnimatedTexture" { "animatedtextureframerate" "10" } }
}"""


def test_vmt_parsing():
    vmt = parse_vmt(VMT)
    assert vmt.shader == "vertexlitgeneric"
    assert vmt.text("$BaseTexture") == "models\\\\props/Crate01"
    assert vmt.color("$color2") == pytest.approx((0.5, 0.25, 1.0))
    assert vmt.number("$alphatestreference") == pytest.approx(0.3) and vmt.flag("$alphatest")
    assert vmt.flag("$nocull") and isinstance(vmt.params["proxies"], dict)
    assert parse_vmt(b'"LightmappedGeneric" { "$color" "{255 128 0}" }').color("$color") == pytest.approx(
        (1, 128 / 255, 0)
    )


def test_patch_materials_include_and_override():
    base = b'"VertexLitGeneric" { "$basetexture" "a/b" "$phong" "1" }'
    patch = b'"patch" { "include" "materials/a/base.vmt" "insert" { "$nocull" "1" } "replace" { "$phong" "0" } }'
    vmt = parse_vmt(patch, "p.vmt", lambda name: base if name == "materials/a/base.vmt" else None)
    assert vmt.shader == "vertexlitgeneric" and vmt.text("$basetexture") == "a/b"
    assert vmt.flag("$nocull") and not vmt.flag("$phong")


def game_tree(tmp_path):
    game = tmp_path / "game"
    (game / "Materials" / "Models" / "Props").mkdir(parents=True)
    (game / "Materials" / "Models" / "Props" / "CRATE.vmt").write_bytes(VMT)
    image = srctools_vtf.VTF(8, 8, fmt=srctools_vtf.ImageFormats.RGBA8888)
    image.get().copy_from(bytes([200, 100, 50, 255]) * 64)
    with open(game / "Materials" / "Models" / "Props" / "crate01.vtf", "wb") as f:
        image.save(f)
    return game


def test_lookup_follows_material_folders_case_insensitively(tmp_path):
    game = game_tree(tmp_path)
    scene = SceneData("m")
    found = source_material("crate", ["models\\\\missing\\\\", "models\\\\props\\\\"], Finder([str(game)]), scene, {})
    assert found.props["source_shader"] == "vertexlitgeneric" and found.alpha_clip == pytest.approx(0.3)
    assert found.base_texture.pixels[0, 0].tolist() == [200, 100, 50, 255]
    assert found.normal_texture is not None and found.normal_texture.pixels is None  # normal map file is absent
    assert found.double_sided and found.emission_from_texture_alpha
    assert any("crate01_normal.vtf' was not found" in w for w in scene.warnings)
    missing = source_material("nothing", ["models/props/"], Finder([str(game)]), scene, {})
    assert missing.props["source_missing"] and missing.base_color == (1.0, 0.0, 1.0)
    assert any("material 'nothing' was not found" in w for w in scene.warnings)
    extra = source_material("crate", ["models/props/"], Finder([str(tmp_path / "nowhere"), str(game)]), scene, {})
    assert extra.props["source_vmt"] == "CRATE.vmt"  # found under a later search root


def test_block_compressed_textures_are_kept_for_blender_and_counted(tmp_path):
    """DXT (and BC4/5/7) textures reach the Blender side as their stored blocks, decoded only if asked; the pixel
    budget counts them as before."""
    game = game_tree(tmp_path)
    image = srctools_vtf.VTF(16, 8, fmt=srctools_vtf.ImageFormats.DXT5)
    image.get().copy_from(bytes(range(256)) * 2)
    with open(game / "Materials" / "Models" / "Props" / "crate01_normal.vtf", "wb") as f:
        image.save(f)
    finder = Finder([str(game)])
    before = finder.pixels.left
    ref = finder.texture("models/props/crate01_normal", [], {})
    assert ref.blocks is not None and ref.blocks.format == "DXT5" and ref.decoded is None
    assert finder.pixels.left == before - 16 * 8
    assert ref.pixels.shape == (8, 16, 4)  # decoded on demand, in numpy


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_textured_import_and_skins(addon):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = samples_dir() / "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    mesh = next(o for o in bpy.data.objects if o.type == "MESH" and "source_phy_solid" not in o)  # not collision
    image = next(
        n.image for n in mesh.material_slots[0].material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage"
    )
    assert tuple(image.size) == (512, 512) and image.packed_file is not None
    bpy.ops.io_ms3d_mdl.source_skin(model="pipe02_45degree01", family=1)
    skin = mesh.material_slots[0].material
    skin_image = next(n.image for n in skin.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    assert skin.name.lower() == "pipesystem01a_skin2" and tuple(skin_image.size) == (256, 512)


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_normal_maps_flip_green(addon, tmp_path):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = samples_dir() / "source/FJH03__CSCZS_GameData/models/shells/shell_9mm.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    material = next(o for o in bpy.data.objects if o.type == "MESH").material_slots[0].material
    nodes = {n.bl_idname for n in material.node_tree.nodes}
    assert {"ShaderNodeNormalMap", "ShaderNodeSeparateColor", "ShaderNodeCombineColor"} <= nodes
    flip = next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeMath" and n.operation == "SUBTRACT")
    assert flip.inputs[0].default_value == 1.0 and flip.inputs[1].links[0].from_socket.name == "Green"


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_textures_decoded_here_are_packed_as_png_with_their_exact_pixels(addon):
    """shell_9mm's VTFs are in formats Blender has no decoder for: decoded in numpy, packed as a PNG written from
    those bytes, and shown by Blender exactly as decoded."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    folder = samples_dir() / "source/FJH03__CSCZS_GameData"
    bpy.ops.import_scene.source_mdl(filepath=str(folder / "models/shells/shell_9mm.mdl"))
    images = [i for i in bpy.data.images if i.name.startswith("xmaterial_")]
    assert sorted(i.name for i in images) == ["xmaterial_3c99fbcea1e0e9d4_n.png", "xmaterial_3c99fbcea1e0e9d4_rgb.png"]
    for image in images:
        assert image.source == "FILE" and image.file_format == "PNG" and image.alpha_mode == "CHANNEL_PACKED"
        assert image.packed_file.data[:8] == b"\x89PNG\r\n\x1a\n" and image.packed_file.size < 512 * 512 * 4
        vtf = next(folder.rglob(image.name.replace(".png", ".vtf")))
        expected = read_vtf(vtf).faces[0]
        width, height = image.size
        pixels = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        shown = np.round(pixels.reshape(height, width, 4)[::-1] * 255).astype(np.uint8)
        np.testing.assert_array_equal(shown, expected)


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_textures_decoded_here_can_be_written_as_png_files(addon, tmp_path):
    """The same PNG, written beside the .blend instead of packed: loaded from there, with the decoder's pixels."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    folder = samples_dir() / "source/FJH03__CSCZS_GameData"
    path = folder / "models/shells/shell_9mm.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), texture_output="PNG") == {"FINISHED"}
    written = sorted(p.name for p in (tmp_path / "textures").iterdir())
    assert written == ["xmaterial_3c99fbcea1e0e9d4_n.png", "xmaterial_3c99fbcea1e0e9d4_rgb.png"]
    for name in written:
        image = bpy.data.images[name]
        assert image.packed_file is None and image.source == "FILE" and image.filepath == f"//textures/{name}"
        assert image.alpha_mode == "CHANNEL_PACKED"
        expected = read_vtf(next(folder.rglob(name.replace(".png", ".vtf")))).faces[0]
        height, width = expected.shape[:2]
        pixels = np.empty(width * height * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        shown = np.round(pixels.reshape(height, width, 4)[::-1] * 255).astype(np.uint8)
        np.testing.assert_array_equal(shown, expected)
    normal = bpy.data.images["xmaterial_3c99fbcea1e0e9d4_n.png"]
    assert normal.colorspace_settings.name == "Non-Color"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), texture_output="PNG") == {"FINISHED"}
    assert sorted(p.name for p in (tmp_path / "textures").iterdir()) == written  # the same bytes: reused


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_cycles_render_shows_the_texture_not_the_placeholder(addon, tmp_path):
    """A small CPU render of a textured sample: the object's pixels carry the texture's colours."""
    from mathutils import Vector

    bpy.ops.wm.read_factory_settings(use_empty=True)
    path = samples_dir() / "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path))
    scene = bpy.context.scene
    obj = next(o for o in bpy.data.objects if o.type == "MESH")
    corners = [obj.matrix_world @ Vector(c) for c in obj.bound_box]
    center = sum(corners, Vector()) / 8
    size = max((c - center).length for c in corners)
    camera = bpy.data.objects.new("camera", bpy.data.cameras.new("camera"))
    scene.collection.objects.link(camera)
    scene.camera = camera
    camera.location = center + Vector((1.2, -1.2, 0.8)) * size * 1.6
    camera.rotation_euler = (center - camera.location).to_track_quat("-Z", "Y").to_euler()
    scene.world = bpy.data.worlds.new("world")
    if scene.world.node_tree is None:
        scene.world.use_nodes = True
    scene.world.node_tree.nodes["Background"].inputs[0].default_value = (0.0, 0.0, 0.0, 1.0)
    scene.world.node_tree.nodes["Background"].inputs[1].default_value = 0.0
    light = bpy.data.objects.new("sun", bpy.data.lights.new("sun", "SUN"))
    light.data.energy = 4.0
    light.rotation_euler = camera.rotation_euler
    scene.collection.objects.link(light)
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples = "CPU", 4
    scene.render.resolution_x = scene.render.resolution_y = 48
    scene.render.filepath = str(tmp_path / "render.png")
    bpy.ops.render.render(write_still=True)
    rendered = bpy.data.images.load(str(tmp_path / "render.png"))
    pixels = np.array(rendered.pixels[:]).reshape(-1, 4)[:, :3]
    lit = pixels[pixels.sum(axis=1) > 0.05]
    assert len(lit) > 100  # the object is in frame
    magenta = (lit[:, 0] > 0.6) & (lit[:, 1] < 0.2) & (lit[:, 2] > 0.6)
    assert magenta.mean() < 0.05  # not the missing-material placeholder
    assert lit.std(axis=0).max() > 0.01  # texture detail, not one flat colour


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_textures_can_be_written_as_png_beside_the_blend(addon, tmp_path):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    path = samples_dir() / "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), texture_output="PNG")
    written = sorted(p.name.lower() for p in (tmp_path / "textures").glob("*.png"))
    assert written == ["pipesystem01a_skin1.png", "pipesystem01a_skin2.png", "pipesystem01a_skin3.png"]
    images = [i for i in bpy.data.images if i.name.lower().startswith("pipesystem")]
    assert len(images) == 3 and all(i.packed_file is None and i.source == "FILE" for i in images)
    assert sorted(tuple(i.size) for i in images) == [(256, 512), (512, 512), (512, 512)]
    assert all(i.filepath.startswith("//textures") for i in images)  # relative to the .blend
