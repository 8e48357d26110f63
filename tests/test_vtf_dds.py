"""Block-compressed VTFs: Strata's format 70 is BC7 and decodes like Pillow's BCn decoder (as BC4 and BC5 do);
through Blender's own DDS decoder every block format gives our numpy decoder's pixels (and srctools'), right side up
and with its alpha, packed compressed into the .blend without a temporary file; where Blender would read the blocks
otherwise, the numpy decoder takes over."""

from __future__ import annotations

import io
import struct
import tempfile

import numpy as np
import pytest
from conftest import bpy, samples_dir

from io_ms3d_mdl.formats.source.vtf import FORMATS, HEADER, BlockImage, decode, read_vtf, read_vtf_bytes
from io_ms3d_mdl.scene.types import ImageRef

try:
    from PIL import Image as PillowImage
except ImportError:
    PillowImage = None

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
needs_pillow = pytest.mark.skipif(PillowImage is None, reason="Pillow (the BCn reference decoder) is a dev dependency")

METAL_BOX = "source/Igrium__portal_nrtx/materials/models/props/metal_box_normal.vtf"
PIPE = "source/Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl"
DXT = ["DXT1", "DXT1_ONEBITALPHA", "DXT3", "DXT5"]
SIZES = [(32, 16), (12, 20), (6, 10), (5, 3), (2, 2), (1, 1)]
BLOCK = {"DXT1": 8, "DXT1_ONEBITALPHA": 8, "DXT3": 16, "DXT5": 16, "BC4": 8, "BC5": 16, "BC7": 16}
PILLOW_DXGI = {"BC4": 80, "BC5": 83, "BC7": 98}


def random_blocks(fmt: str, width: int, height: int, seed: int = 0) -> bytes:
    """Random blocks; plain DXT1's are all four-colour (VTF's DXT1 is opaque, see test_opaque_dxt1_...)."""
    count = max(1, (width + 3) // 4) * max(1, (height + 3) // 4)
    blocks = np.random.default_rng(seed).integers(0, 256, (count, BLOCK[fmt]), dtype=np.uint8)
    if fmt == "DXT1":
        blocks[:, 1] |= 0x80  # colour 0 > colour 1: four-colour blocks
        blocks[:, 3] &= 0x7F
    if fmt == "BC7":  # every one of the eight modes (the mode is the lowest set bit of the first byte)
        modes = np.arange(count) % 8
        keep = ~((2 << modes) - 1) & 0xFF
        blocks[:, 0] = (blocks[:, 0] & keep) | (1 << modes)
    return blocks.tobytes()


def pillow_decode(fmt: str, width: int, height: int, data: bytes) -> np.ndarray:
    """Pillow's BCn decoder (independent of ours and of Blender's) on a DX10 DDS file written here."""
    header = struct.pack("<7I", 124, 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000, height, width, len(data), 0, 1)
    header += (
        bytes(44) + struct.pack("<II4s5I", 32, 0x4, b"DX10", 0, 0, 0, 0, 0) + struct.pack("<5I", 0x1000, 0, 0, 0, 0)
    )
    dds = b"DDS " + header + struct.pack("<5I", PILLOW_DXGI[fmt], 3, 0, 1, 0) + data
    return np.asarray(PillowImage.open(io.BytesIO(dds)).convert("RGBA"))


# --- the reader (no Blender) --------------------------------------------------------------------------------------


def test_format_70_is_strata_bc7():
    """The sample's header says 1024², 11 mips, format 70, and a 16×16 DXT1 thumbnail; its data is exactly that
    mip chain at 16 bytes per 4×4 block (BC7's size), after the thumbnail."""
    data = (samples_dir() / METAL_BOX).read_bytes()
    header = np.frombuffer(data[:80], HEADER, 1)[0]
    assert (int(header["format"]), int(header["width"]), int(header["mip_count"])) == (70, 1024, 11)
    chain = sum(max(1, (1024 >> m) // 4) ** 2 * 16 for m in range(11))
    assert len(data) == int(header["header_size"]) + 4 * 4 * 8 + chain
    assert FORMATS[70] == ("BC7", 0)


@needs_pillow
def test_format_70_sample_decodes_like_pillow():
    path = samples_dir() / METAL_BOX
    ours = read_vtf(path).faces[0]
    blocks = read_vtf_bytes(path.read_bytes(), keep_blocks=True).blocks[0]
    np.testing.assert_array_equal(ours, pillow_decode("BC7", 1024, 1024, blocks.data))
    assert ours[..., 2].mean() > 240  # a tangent-space normal map: blue (Z) up


@needs_pillow
@pytest.mark.parametrize("fmt", ["BC7", "BC4", "BC5"])
def test_bc4_bc5_bc7_decode_like_pillow(fmt):
    """BC7 exactly; BC4 and BC5 within 1/255 (Pillow truncates interpolated values, ours round as Blender does)."""
    data = random_blocks(fmt, 64, 32, seed=3)
    ours, reference = decode(data, fmt, 64, 32).astype(int), pillow_decode(fmt, 64, 32, data).astype(int)
    if fmt == "BC7":
        np.testing.assert_array_equal(ours, reference)
    elif fmt == "BC4":
        assert np.abs(ours - reference).max() <= 1
    else:  # Pillow leaves blue 0; ours rebuilds Z as the engine and Blender do
        assert np.abs(ours[..., :2] - reference[..., :2]).max() <= 1
        xy = ours[..., :2] / 127.5 - 1.0
        z = np.sqrt(np.clip(1.0 - (xy**2).sum(axis=-1), 0.0, None))
        np.testing.assert_allclose(ours[..., 2], (z * 0.5 + 0.5) * 255, atol=1.0 + 1e-3)


def test_kept_blocks_are_the_stored_level_and_decode_like_the_reader():
    srctools_vtf = pytest.importorskip("srctools.vtf")
    image = np.random.default_rng(1).integers(0, 256, (16, 32, 4), dtype=np.uint8)
    vtf = srctools_vtf.VTF(32, 16, fmt=srctools_vtf.ImageFormats.DXT5)
    vtf.get().copy_from(image.tobytes())
    buffer = io.BytesIO()
    vtf.save(buffer)
    data = buffer.getvalue()
    kept = read_vtf_bytes(data, keep_blocks=True)
    assert not kept.faces and kept.face_count == 1 and len(kept.blocks[0].data) == 8 * 4 * 16
    assert data.endswith(kept.blocks[0].data)  # the largest level is stored last
    np.testing.assert_array_equal(kept.blocks[0].decode(), read_vtf_bytes(data).faces[0])
    ref = ImageRef("t.vtf", None, loadable=False, blocks=kept.blocks[0])
    assert ref.decoded is None  # nothing is decoded until someone asks for pixels
    np.testing.assert_array_equal(ref.pixels, read_vtf_bytes(data).faces[0])


# --- through Blender --------------------------------------------------------------------------------------------


def blender_pixels(image: bpy.types.Image) -> np.ndarray:
    """An image's pixels as (height, width, 4) in 0–255, top row first (Blender's rows start at the bottom)."""
    width, height = image.size
    pixels = np.empty(width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    return pixels.reshape(height, width, 4)[::-1] * 255.0


def through_blender(fmt: str, width: int, height: int, data: bytes) -> np.ndarray:
    from io_ms3d_mdl.blender import dds

    image = dds.load("probe.dds", BlockImage(fmt, width, height, data))
    try:
        image.alpha_mode = "CHANNEL_PACKED"
        return blender_pixels(image)
    finally:
        bpy.data.images.remove(image)


def assert_like_ours(got: np.ndarray, expected: np.ndarray) -> None:
    """Endpoints and alpha within 1/255; interpolated DXT colours within 2/255, as Blender's decoder rounds the exact
    interpolant where ours (and srctools) truncate one of the 8-bit endpoints (a few percent of channels)."""
    assert got.shape == expected.shape
    diff = np.abs(got - expected)
    assert diff[..., 3].max() <= 1.0 + 1e-3
    assert diff[..., :3].max() <= 2.0 + 1e-3
    assert (diff[..., :3] > 1.0 + 1e-3).mean() < 0.05


@needs_blender
def test_this_blender_decodes_every_block_format():
    """DXT1/3/5, BC4, BC5 and BC7 decode in Blender 4.2, 4.5 and 5.0, right side up with alpha as stored."""
    from io_ms3d_mdl.blender import dds

    families = ["DXT1", "DXT3", "DXT5", "DXGI80", "DXGI83", "DXGI98"]
    assert {family: dds.blender_decodes(family) for family in families} == dict.fromkeys(families, True)


@needs_blender
@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("fmt", DXT)
def test_dxt_through_blender_gives_our_pixels(fmt, size):
    data = random_blocks(fmt, *size, seed=len(fmt) + size[0])
    assert_like_ours(through_blender(fmt, *size, data), decode(data, fmt, *size).astype(np.float32))


@needs_blender
@pytest.mark.parametrize("fmt", DXT)
def test_dxt_through_blender_gives_srctools_pixels(fmt):
    """srctools compresses a random image (real encoder output, alpha included); the image loader shows what
    srctools decodes, whichever decoder it picks (its encoder gives plain DXT1 transparent-black blocks, which go
    to numpy). srctools makes power-of-two textures only; other sizes are checked against our decoder above."""
    from io_ms3d_mdl.blender.material import ImageLoader
    from io_ms3d_mdl.errors import Warnings

    srctools_vtf = pytest.importorskip("srctools.vtf")
    image = np.random.default_rng(len(fmt)).integers(0, 256, (32, 16, 4), dtype=np.uint8)
    vtf = srctools_vtf.VTF(16, 32, fmt=getattr(srctools_vtf.ImageFormats, fmt))
    vtf.get().copy_from(image.tobytes())
    buffer = io.BytesIO()
    vtf.save(buffer)
    frame = srctools_vtf.VTF.read(io.BytesIO(buffer.getvalue())).get()
    frame.load()
    expected = np.frombuffer(bytes(frame._data), np.uint8).reshape(32, 16, 4).astype(np.float32)
    blocks = read_vtf_bytes(buffer.getvalue(), keep_blocks=True).blocks[0]
    image = ImageLoader(Warnings()).get(ImageRef(f"{fmt}.vtf", f"/nowhere/{fmt}.vtf", loadable=False, blocks=blocks))
    try:
        assert_like_ours(blender_pixels(image), expected)
    finally:
        bpy.data.images.remove(image)


@needs_blender
@pytest.mark.parametrize("fmt", ["BC7", "BC4", "BC5"])
def test_bc4_bc5_bc7_through_blender_give_our_pixels(fmt):
    data = random_blocks(fmt, 36, 20, seed=9)
    got, ours = through_blender(fmt, 36, 20, data), decode(data, fmt, 36, 20).astype(np.float32)
    np.testing.assert_allclose(got, ours, atol=1e-3)


@needs_blender
def test_opaque_dxt1_that_a_dds_reader_would_make_transparent_is_decoded_by_us(addon):
    """Index 3 of a three-colour block is opaque black in VTF's plain DXT1 and transparent to a DDS reader: such a
    texture goes through the numpy decoder, and keeps its alpha."""
    from io_ms3d_mdl.blender import dds
    from io_ms3d_mdl.blender.material import ImageLoader
    from io_ms3d_mdl.errors import Warnings

    bpy.ops.wm.read_factory_settings(use_empty=True)
    three_colour = struct.pack("<HHI", 0x0000, 0xFFFF, 0xFFFFFFFF)  # colour 0 <= colour 1, every index 3
    blocks = BlockImage("DXT1", 8, 4, random_blocks("DXT1", 4, 4) + three_colour)
    assert not dds.decodes_as_ours(blocks) and dds.decodes_as_ours(BlockImage("DXT1", 4, 4, blocks.data[:8]))
    image = ImageLoader(Warnings()).get(ImageRef("mixed.vtf", "/nowhere/mixed.vtf", loadable=False, blocks=blocks))
    assert image.name == "mixed.png" and image.alpha_mode == "CHANNEL_PACKED"
    np.testing.assert_allclose(blender_pixels(image), blocks.decode(), atol=0.51)
    assert blender_pixels(image)[:, 4:, 3].min() == 255.0


@needs_blender
def test_import_packs_the_compressed_blocks_and_writes_no_file(addon, tmp_path, monkeypatch):
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    bpy.ops.wm.read_factory_settings(use_empty=True)
    assert bpy.ops.import_scene.source_mdl(filepath=str(samples_dir() / PIPE)) == {"FINISHED"}
    images = sorted((i for i in bpy.data.images if i.name.lower().startswith("pipesystem")), key=lambda i: i.name)
    assert [i.name.lower() for i in images] == [f"pipesystem01a_skin{n}.dds" for n in (1, 2, 3)]
    for image in images:
        blocks = read_vtf_bytes(pipe_texture(image.name).read_bytes(), keep_blocks=True).blocks[0]
        assert image.packed_file.size == 4 + 124 + len(blocks.data)  # the blocks as stored, behind a DDS header
        assert image.alpha_mode == "CHANNEL_PACKED" and image.source == "FILE"
        assert_like_ours(blender_pixels(image), blocks.decode().astype(np.float32))
    assert not list(temporary.iterdir())


@needs_blender
def test_format_70_imports_through_blender(addon, capsys):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    model = samples_dir() / "source/Igrium__portal_nrtx/models/props/metal_box.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(model)) == {"FINISHED"}
    assert "format 70" not in capsys.readouterr().out
    image = bpy.data.images["metal_box_normal.dds"]
    assert image.colorspace_settings.name == "Non-Color" and "io_ms3d_mdl_missing" not in image
    assert image.packed_file.size == 4 + 124 + 20 + 1024 * 1024  # DX10 header, then the BC7 blocks
    np.testing.assert_allclose(blender_pixels(image), read_vtf(samples_dir() / METAL_BOX).faces[0], atol=1e-3)


@needs_blender
def test_png_output_writes_the_pixels_blender_decodes(addon, tmp_path):
    bpy.ops.wm.read_factory_settings(use_empty=True)
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    assert bpy.ops.import_scene.source_mdl(filepath=str(samples_dir() / PIPE), texture_output="PNG") == {"FINISHED"}
    for path in sorted((tmp_path / "textures").glob("*.png")):
        image = bpy.data.images[path.name]
        assert image.packed_file is None and image.alpha_mode == "CHANNEL_PACKED"
        written = bpy.data.images.load(str(path), check_existing=False)
        written.alpha_mode = "CHANNEL_PACKED"
        expected = through_blender(*_largest_level(pipe_texture(path.name)))
        np.testing.assert_allclose(blender_pixels(written), expected, atol=1e-3)
    assert not [p for p in (tmp_path / "textures").iterdir() if p.name.startswith(".")]


def pipe_texture(name: str):
    """The pipe's VTF an image is named after (the VMT and the file differ in case)."""
    folder = samples_dir() / "source/Igrium__portal_nrtx/materials/models/props_pipes"
    stem = name.rsplit(".", 1)[0].lower()
    return next(p for p in folder.iterdir() if p.name.lower() == stem + ".vtf")


def _largest_level(path) -> tuple[str, int, int, bytes]:
    blocks = read_vtf_bytes(path.read_bytes(), keep_blocks=True).blocks[0]
    return blocks.format, blocks.width, blocks.height, blocks.data
