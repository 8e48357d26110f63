"""BC6H (HDR) textures: our numpy decoder gives, bit for bit in half floats, what an independent decoder gives
(imagecodecs' BCn codec, a dev dependency) for blocks of every one of the 14 modes, unsigned and signed, random and
hand-built; Strata's VTF format 71 (signed) and Titanfall's 66 (unsigned) decode within the texture budget; and
through Blender the block data is packed as a DDS that this Blender decodes to the same floats (probed per
session), or, where it cannot, the numpy decoder's floats become a linear float image."""

from __future__ import annotations

import io
import struct

import numpy as np
import pytest
from conftest import bpy

from io_ms3d_mdl.formats.source import bc6h
from io_ms3d_mdl.formats.source.vtf import FORMATS, HEADER, BlockImage, TextureTooLarge, decode, read_vtf_bytes
from io_ms3d_mdl.scene.types import ImageRef, MaterialData

try:
    import imagecodecs
except ImportError:
    imagecodecs = None
try:
    from PIL import Image as PillowImage
except ImportError:
    PillowImage = None

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
needs_reference = pytest.mark.skipif(imagecodecs is None, reason="imagecodecs (the BC6H reference) is a dev dependency")

MODES = [0, 1, 2, 6, 10, 14, 18, 22, 26, 30, 3, 7, 11, 15]
RESERVED = [19, 23, 27, 31]
FORMAT = {False: "BC6H_UF16", True: "BC6H_SF16"}


def with_mode(blocks: np.ndarray, modes: np.ndarray) -> np.ndarray:
    """Blocks with their mode bits set: two bits for modes 0 and 1, five for the others."""
    blocks = blocks.copy()
    two = modes < 2
    blocks[two, 0] = (blocks[two, 0] & 0xFC) | modes[two]
    blocks[~two, 0] = (blocks[~two, 0] & 0xE0) | modes[~two]
    return blocks


def random_blocks(count: int, seed: int, modes: list[int] = MODES) -> np.ndarray:
    """``count`` random blocks, the modes taken in turn."""
    blocks = np.random.default_rng(seed).integers(0, 256, (count, 16), dtype=np.uint8)
    return with_mode(blocks, np.array(modes)[np.arange(count) % len(modes)])


def walking_bits(mode: int, ones: bool) -> np.ndarray:
    """Hand-built blocks of one mode: each bit after the mode bits set alone in zeros (or clear alone in ones), so
    every field of the mode's layout, the partition and each index bit is seen on its own."""
    first = 2 if mode < 2 else 5
    bits = np.full((128 - first, 128), 1 if ones else 0, dtype=np.uint8)
    bits[np.arange(128 - first), np.arange(first, 128)] ^= 1
    return with_mode(np.packbits(bits, axis=1, bitorder="little"), np.full(128 - first, mode))


def halves(pixels: np.ndarray) -> np.ndarray:
    """The half-float bit patterns of RGB (our float32 values are exactly halves)."""
    rgb = pixels[..., :3]
    assert (rgb.astype(np.float16).astype(np.float32) == rgb).all()
    return rgb.astype(np.float16).view(np.uint16)


def reference(blocks: np.ndarray, signed: bool, width: int, height: int) -> np.ndarray:
    """imagecodecs' BC6H decoder (bcdec): half floats, (height, width, 3). It wants at least 144 bytes of input."""
    data = blocks.tobytes().ljust(144, b"\0")
    return imagecodecs.bcn_decode(data, -6 if signed else 6, shape=(height, width, 3)).view(np.uint16)


def ours(blocks: np.ndarray, signed: bool, width: int, height: int) -> np.ndarray:
    return decode(blocks.tobytes(), FORMAT[signed], width, height)


def as_image(blocks: np.ndarray) -> tuple[int, int]:
    """A width × height holding the blocks as rows of 16 blocks."""
    assert len(blocks) % 16 == 0
    return 64, len(blocks) // 16 * 4


# --- the decoder against the reference --------------------------------------------------------------------------


@needs_reference
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_random_blocks_of_every_mode_match_the_reference_bit_for_bit(signed):
    blocks = random_blocks(14 * 64, seed=7 + signed)
    size = as_image(blocks)
    np.testing.assert_array_equal(halves(ours(blocks, signed, *size)), reference(blocks, signed, *size))


@needs_reference
@pytest.mark.parametrize("ones", [False, True], ids=["one-bit", "one-bit-clear"])
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
@pytest.mark.parametrize("mode", MODES)
def test_hand_built_blocks_of_each_mode_match_the_reference(mode, signed, ones):
    blocks = walking_bits(mode, ones)
    blocks = np.concatenate([blocks, np.zeros((-len(blocks) % 16, 16), np.uint8)])  # whole rows of 16
    size = as_image(blocks)
    got, expected = halves(ours(blocks, signed, *size)), reference(blocks, signed, *size)
    np.testing.assert_array_equal(got, expected)
    assert len(np.unique(got)) > 2  # the patterns reach real values, not only black


@pytest.mark.parametrize("signed", [False, True])
def test_reserved_modes_are_black_and_opaque(signed):
    pixels = ours(random_blocks(16, seed=3, modes=RESERVED), signed, 64, 4)
    assert (pixels[..., :3] == 0).all() and (pixels[..., 3] == 1).all()


def flat_mode3(red: int, green: int, blue: int) -> bytes:
    """Mode 3, both 10-bit endpoints one colour, indices 0 (written here from Table F, not with the decoder's)."""
    colour = (red & 1023) | (green & 1023) << 10 | (blue & 1023) << 20
    return (3 | colour << 5 | colour << 35).to_bytes(16, "little")


def test_values_worked_out_by_hand_from_the_specification():
    """Mode 3 unsigned: 561 unquantizes to (561 << 15 | 0x4000) >> 9 = 35936, × 31 >> 6 = 0x43FE (3.99609375);
    signed, -280 is -(280 × 64 + 32) = -17952, × 31 >> 5 = 17391 with the sign: 0xC3EF. Mode 15 stores r0's top
    six bits reversed after r1: block bit 39 is r0's bit 15, so r0 = 0x8000 (16 bits: not unquantized), × 31 >> 6
    = 0x3E00 (1.5); block bit 44 is r0's bit 10: 0x400 → 496, the denormal 496 × 2⁻²⁴."""
    unsigned = decode(flat_mode3(561, 0, 1023), "BC6H_UF16", 4, 4)
    np.testing.assert_array_equal(unsigned[0, 0], [3.99609375, 0.0, 65504.0, 1.0])
    signed = decode(flat_mode3(280, -280, 0), "BC6H_SF16", 4, 4)
    assert halves(signed)[0, 0].tolist() == [0x43EF, 0xC3EF, 0]
    for bit, red in ((39, 1.5), (44, 496 * 2.0**-24)):
        block = (15 | 1 << bit).to_bytes(16, "little")
        pixels = decode(block, "BC6H_UF16", 4, 4)
        assert pixels[0, 0, 0] == red and (pixels[..., 1:3] == 0).all()


def test_layouts_place_every_header_bit_once():
    """Table F as transcribed: each mode's header is its mode bits and every endpoint bit of its precision, each
    exactly once (77 bits before the partition of two-subset modes, 65 before the indices of the others)."""
    for mode, (transformed, subsets, epb, deltas) in bc6h.MODES.items():
        weights = bc6h.HEADERS[mode]
        channels = (weights > 0).sum(axis=0)
        widths = [epb] * 3 + list(deltas) * (2 * subsets - 1) + [0] * 3 * (4 - 2 * subsets)
        assert channels.tolist() == widths, mode
        assert ((weights > 0).sum(axis=1) <= 1).all()
        assert transformed == (mode not in (3, 30))


@pytest.mark.skipif(PillowImage is None, reason="Pillow is a dev dependency")
def test_unsigned_agrees_with_pillow_in_8_bits():
    """A second independent decoder, Pillow's, gives 8-bit RGB: our values clamped to [0, 1], × 255, truncated
    (within 1 where float32 rounds across a step). Its signed decoder disagrees with the specification (and with
    imagecodecs and Blender) on most blocks, so only unsigned is compared."""
    blocks = random_blocks(14 * 32, seed=11)
    width, height = as_image(blocks)
    data = blocks.tobytes()
    header = struct.pack("<7I", 124, 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000, height, width, len(data), 0, 1)
    header += bytes(44) + struct.pack("<II4s5I", 32, 0x4, b"DX10", 0, 0, 0, 0, 0) + bytes(20)
    dds = b"DDS " + header + struct.pack("<5I", 95, 3, 0, 1, 0) + data
    pillow = np.asarray(PillowImage.open(io.BytesIO(dds)).convert("RGB")).astype(int)
    expected = np.floor(np.clip(ours(blocks, False, width, height)[..., :3], 0, 1) * 255).astype(int)
    assert np.abs(pillow - expected).max() <= 1 and (pillow != expected).mean() < 0.01


# --- VTF --------------------------------------------------------------------------------------------------------


def vtf_bytes(fmt_id: int, width: int, height: int, levels: list[bytes]) -> bytes:
    """A VTF 7.2 file (no low-res image, no resources) of the given mip levels, largest first as passed."""
    header = np.zeros(1, HEADER)
    header["signature"], header["version"], header["header_size"] = b"VTF\0", (7, 2), 80
    header["width"], header["height"], header["frames"], header["format"] = width, height, 1, fmt_id
    header["mip_count"], header["low_format"], header["depth"] = len(levels), -1, 1
    return header.tobytes() + b"".join(reversed(levels))  # stored smallest first


@pytest.mark.parametrize(("fmt_id", "signed"), [(71, True), (66, False)])
def test_vtf_formats_71_and_66_decode_to_floats(fmt_id, signed):
    assert FORMATS[fmt_id] == (FORMAT[signed], 0)
    large, small = random_blocks(8, seed=fmt_id), random_blocks(2, seed=fmt_id + 1)
    data = vtf_bytes(fmt_id, 16, 8, [large.tobytes(), small.tobytes()])
    image = read_vtf_bytes(data)
    assert (image.format, image.width, image.height, image.faces[0].dtype) == (FORMAT[signed], 16, 8, np.float32)
    np.testing.assert_array_equal(image.faces[0], ours(large, signed, 16, 8))
    kept = read_vtf_bytes(data, keep_blocks=True).blocks[0]
    assert kept == BlockImage(FORMAT[signed], 16, 8, large.tobytes())
    within = read_vtf_bytes(data, max_pixels=32)  # the budget picks the level that fits
    assert (within.width, within.height) == (8, 4)
    np.testing.assert_array_equal(within.faces[0], ours(small, signed, 8, 4))
    with pytest.raises(TextureTooLarge):
        read_vtf_bytes(data, max_pixels=16)


# --- through Blender --------------------------------------------------------------------------------------------


def blender_floats(image: bpy.types.Image) -> np.ndarray:
    """An image's pixels as (height, width, 4) floats, top row first (Blender's rows start at the bottom)."""
    width, height = image.size
    pixels = np.empty(width * height * 4, dtype=np.float32)
    image.pixels.foreach_get(pixels)
    return pixels.reshape(height, width, 4)[::-1]


@needs_blender
def test_this_blender_decodes_bc6h_unsigned_and_signed():
    """The probe: 4.2, 4.5 and 5.0 decode both BC6H formats from a packed DDS, as float images whose values are
    exact once the image is linear."""
    from io_ms3d_mdl.blender import dds

    version = bpy.app.version_string
    assert (dds.blender_decodes("DXGI95"), dds.blender_decodes("DXGI96")) == (True, True), version


def load_through_material(blocks: BlockImage, name: str) -> bpy.types.Image:
    """The product's path: a material whose base texture is the VTF's kept blocks."""
    from io_ms3d_mdl.blender.material import ImageLoader, build_material
    from io_ms3d_mdl.errors import Warnings

    ref = ImageRef(f"{name}.vtf", f"/nowhere/{name}.vtf", loadable=False, blocks=blocks)
    material = build_material(MaterialData(name, (1.0, 1.0, 1.0), base_texture=ref), ImageLoader(Warnings()))
    node = next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    return node.image


@needs_blender
@pytest.mark.parametrize(("fmt_id", "signed"), [(71, True), (66, False)])
def test_bc6h_vtf_through_blender_keeps_its_floats(addon, fmt_id, signed):
    from io_ms3d_mdl.blender import dds

    bpy.ops.wm.read_factory_settings(use_empty=True)
    blocks = random_blocks(14 * 4, seed=fmt_id + 5)
    data = vtf_bytes(fmt_id, 28, 32, [blocks.tobytes()])
    kept = read_vtf_bytes(data, keep_blocks=True).blocks[0]
    assert dds.decodes_as_ours(kept)
    image = load_through_material(kept, f"hdr{fmt_id}")
    assert image.name == f"hdr{fmt_id}.dds" and image.packed_file.size == 4 + 124 + 20 + len(blocks.tobytes())
    assert image.is_float and image.colorspace_settings.name == dds.LINEAR
    pixels = blender_floats(image)
    np.testing.assert_array_equal(pixels, read_vtf_bytes(data).faces[0])
    assert (pixels[..., :3] > 1).any() and ((pixels[..., :3] < 0).any() == signed)  # HDR, negative only signed


@needs_blender
@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_bc6h_falls_back_to_a_linear_float_image(addon, monkeypatch, signed):
    """Where this Blender could not decode BC6H, the numpy floats become a float image, packed as OpenEXR."""
    from io_ms3d_mdl.blender import dds

    bpy.ops.wm.read_factory_settings(use_empty=True)
    monkeypatch.setattr(dds, "decodes_as_ours", lambda image: False)
    blocks = BlockImage(FORMAT[signed], 12, 8, random_blocks(6, seed=21 + signed).tobytes())
    image = load_through_material(blocks, "fallback")
    assert image.name == "fallback.exr" and image.is_float and image.colorspace_settings.name == dds.LINEAR
    assert image.packed_file is not None and image.file_format == "OPEN_EXR"
    np.testing.assert_array_equal(blender_floats(image), blocks.decode())


# --- infinities never reach Blender -------------------------------------------------------------------------------

# A signed mode-15 block (16-bit endpoints) whose endpoints are all 0x8000: -32768 unquantized, a magnitude of
# 0x7C00 once scaled, -inf in every channel (Blender's decoder and ours alike).
MINUS_INFINITY = (15 | 1 << 39 | 1 << 49 | 1 << 59).to_bytes(16, "little")


def test_signed_0x8000_endpoints_decode_to_minus_infinity():
    """What the guard is for: the decoders are right to give -inf (the specification's arithmetic does)."""
    block = np.frombuffer(MINUS_INFINITY, np.uint8).reshape(1, 16)
    assert (bc6h.decode_bc6h(block, signed=True)[0, :, :3] == -np.inf).all()


def test_finite_pixels_clamps_to_half_floats_and_zeroes_nan():
    from io_ms3d_mdl.scene.finite import HALF_MAX, finite_pixels

    pixels = np.array([[np.nan, np.inf, -np.inf, 1e6], [-7e4, 65504.0, -1.5, 0.25]], np.float32)
    assert finite_pixels(pixels) == 5
    np.testing.assert_array_equal(pixels, [[0, HALF_MAX, -HALF_MAX, HALF_MAX], [-HALF_MAX, 65504.0, -1.5, 0.25]])
    assert finite_pixels(pixels) == 0 and finite_pixels(np.full((2, 2, 4), 255, np.uint8)) == 0


def infinite_vtf() -> tuple[bytes, np.ndarray]:
    """An 8×4 signed BC6H VTF: one ordinary block, one of -inf; and what the pixels become once guarded."""
    ordinary = random_blocks(1, seed=33)
    data = vtf_bytes(71, 8, 4, [ordinary.tobytes() + MINUS_INFINITY])
    expected = read_vtf_bytes(data).faces[0].copy()
    assert np.isinf(expected[:, 4:, :3]).all() and np.isfinite(expected[:, :4]).all()
    expected[:, 4:, :3] = -65504.0
    return data, expected


def load_with_warnings(blocks: BlockImage, name: str) -> tuple[bpy.types.Image, list[str]]:
    from io_ms3d_mdl.blender.material import ImageLoader, build_material
    from io_ms3d_mdl.errors import Warnings

    warnings = Warnings()
    loader = ImageLoader(warnings)
    for n in range(2):  # two materials with such a texture: still one warning
        ref = ImageRef(f"{name}{n}.vtf", f"/nowhere/{name}{n}.vtf", loadable=False, blocks=blocks)
        material = build_material(MaterialData(f"{name}{n}", (1.0, 1.0, 1.0), base_texture=ref), loader)
    node = next(n for n in material.node_tree.nodes if n.bl_idname == "ShaderNodeTexImage")
    return node.image, list(warnings)


@needs_blender
@pytest.mark.parametrize("decoder", ["blender", "numpy"])
def test_infinite_bc6h_pixels_reach_blender_finite(addon, monkeypatch, tmp_path, decoder):
    """Whichever decoder made the floats (Blender's DDS loader, or ours where Blender cannot), the image Blender
    holds, and keeps through save and reload, is finite: -inf clamped to -65504, the other pixels untouched, and
    one warning."""
    from io_ms3d_mdl.blender import dds
    from io_ms3d_mdl.scene.finite import PIXEL_WARNING

    bpy.ops.wm.read_factory_settings(use_empty=True)
    if decoder == "numpy":
        monkeypatch.setattr(dds, "decodes_as_ours", lambda image: False)
    data, expected = infinite_vtf()
    kept = read_vtf_bytes(data, keep_blocks=True).blocks[0]
    assert decoder == "numpy" or dds.decodes_as_ours(kept)
    image, warnings = load_with_warnings(kept, f"inf_{decoder}")
    assert warnings == [PIXEL_WARNING]
    assert image.is_float and image.colorspace_settings.name == dds.LINEAR and image.file_format == "OPEN_EXR"
    np.testing.assert_array_equal(blender_floats(image), expected)
    name = image.name
    path = tmp_path / "guarded.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path))
    bpy.ops.wm.open_mainfile(filepath=str(path))
    np.testing.assert_array_equal(blender_floats(bpy.data.images[name]), expected)


@needs_blender
def test_finite_bc6h_from_blender_stays_a_packed_dds(addon):
    """The check costs a read-back, never the DDS: an image without infinities keeps Blender's packed blocks."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    blocks = BlockImage("BC6H_SF16", 8, 4, random_blocks(2, seed=34).tobytes())
    image, warnings = load_with_warnings(blocks, "fine")
    assert warnings == [] and image.name == "fine1.dds" and image.packed_file.size == 4 + 124 + 20 + 32
