"""Block-compressed textures through Blender's own C++ decoder: the blocks, untouched, behind a DDS header, packed
into the .blend file as they are (0.5–1 byte a pixel) and decoded by Blender when first shown.

Nothing is written to disk: the DDS bytes are packed straight from memory and Blender reads them from there. Which
formats this Blender decodes, right side up and with the alpha our decoder gives, is probed once per session with a
tiny image (4.2, 4.5 and 5.0 decode all of them); any other falls back to the numpy decoder.

BC6H (HDR) loads as a float image. Blender reads a DDS's floats as sRGB-encoded unless told otherwise, so its
images are linear (the values BC6H stores, bit for bit) before anything reads their pixels.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import bpy
import numpy as np

from .packed_image import packed_image

# VTF block format → DDS pixel format: a legacy FourCC, or a DXGI format behind the DX10 extended header.
FOURCC = {"DXT1": b"DXT1", "DXT1_ONEBITALPHA": b"DXT1", "DXT3": b"DXT3", "DXT5": b"DXT5"}
# BC4_UNORM, BC5_UNORM, BC7_UNORM, BC6H_UF16, BC6H_SF16
DXGI = {"ATI1N": 80, "BC4": 80, "ATI2N": 83, "BC5": 83, "BC7": 98, "BC6H_UF16": 95, "BC6H_SF16": 96}
HDR = ("BC6H_UF16", "BC6H_SF16")
LINEAR = "Linear Rec.709"  # the colour space of HDR data (and of Blender's float images by default)

DXT1_BLOCK = np.dtype([("c0", "<u2"), ("c1", "<u2"), ("bits", "<u4")])  # two RGB565 endpoints, 16 2-bit indices
DDSD_FLAGS = 0x1 | 0x2 | 0x4 | 0x1000 | 0x80000  # caps, height, width, pixel format, linear size
DDPF_FOURCC = 0x4
DDSCAPS_TEXTURE = 0x1000
DX10_TEXTURE2D = 3


class Blocks(Protocol):
    """A block-compressed image (``formats.source.vtf.BlockImage``)."""

    format: str
    width: int
    height: int
    data: bytes


def dds_bytes(fmt: str, width: int, height: int, data: bytes) -> bytes:
    """A DDS file of one image (no mipmaps) around ``data``: rows of 4×4 blocks, top row first, as VTF stores them."""
    if fmt in FOURCC:
        pixel_format = struct.pack("<II4s5I", 32, DDPF_FOURCC, FOURCC[fmt], 0, 0, 0, 0, 0)
        extended = b""
    else:
        pixel_format = struct.pack("<II4s5I", 32, DDPF_FOURCC, b"DX10", 0, 0, 0, 0, 0)
        extended = struct.pack("<5I", DXGI[fmt], DX10_TEXTURE2D, 0, 1, 0)
    header = (
        struct.pack("<7I", 124, DDSD_FLAGS, height, width, len(data), 0, 1)
        + bytes(44)
        + pixel_format
        + struct.pack("<5I", DDSCAPS_TEXTURE, 0, 0, 0, 0)
    )
    return b"DDS " + header + extended + data


def load(name: str, image: Blocks) -> bpy.types.Image:
    """An image whose packed file is the DDS: Blender decodes it (lazily) from memory; no temporary file."""
    result = packed_image(name, dds_bytes(image.format, image.width, image.height, image.data))
    if image.format in HDR:
        result.colorspace_settings.name = LINEAR
    return result


def decodes_as_ours(image: Blocks) -> bool:
    """Blender shows the pixels our decoder gives: it decodes the format, and the data has nothing a DDS reader
    reads otherwise (see :func:`opaque_dxt1_keeps_black`). Decoders round differently: DXT endpoints and alpha agree
    within 1/255, interpolated DXT colours within 2/255; BC4, BC5, BC7 and BC6H exactly."""
    if image.format not in FOURCC and image.format not in DXGI:
        return False
    if image.format == "DXT1" and not opaque_dxt1_keeps_black(image.data):
        return False
    return blender_decodes(_family(image.format))


def opaque_dxt1_keeps_black(data: bytes) -> bool:
    """VTF's plain DXT1 is opaque: index 3 of a three-colour block is opaque black, where DDS readers make it
    transparent. True when no block uses it (encoders rarely do without alpha), so Blender's alpha is ours too."""
    blocks = np.frombuffer(data, DXT1_BLOCK)
    bits = blocks["bits"]
    three_colour = blocks["c0"] <= blocks["c1"]
    uses_index_3 = (bits & (bits >> 1) & 0x55555555) != 0
    return not bool((three_colour & uses_index_3).any())


def _family(fmt: str) -> str:
    """The DDS format a VTF format is written as (formats of one family decode alike)."""
    return FOURCC[fmt].decode() if fmt in FOURCC else f"DXGI{DXGI[fmt]}"


# A 4×8 probe per family: a white 4×4 block above a black one (alpha opaque in both).
_WHITE_BLACK = {
    "DXT1": struct.pack("<HHI", 0xFFFF, 0xFFFF, 0) + struct.pack("<HHI", 0, 0, 0),
    "DXT3": b"\xff" * 8 + struct.pack("<HHI", 0xFFFF, 0xFFFF, 0) + b"\xff" * 8 + struct.pack("<HHI", 0, 0, 0),
    "DXT5": b"\xff\xff" + bytes(6) + struct.pack("<HHI", 0xFFFF, 0xFFFF, 0) + b"\xff\xff" + bytes(14),
    "DXGI80": b"\xff\xff" + bytes(6) + bytes(8),
    "DXGI83": (b"\xff\xff" + bytes(6)) * 2 + bytes(16),
    # mode 6: every endpoint field and p-bit set (white); black has only the alpha endpoints and p-bits set
    "DXGI98": (((1 << 58) - 1) << 7 | 1 << 6).to_bytes(16, "little")
    + ((0x3FFF << 49) | 3 << 63 | 1 << 6).to_bytes(16, "little"),
}


def _bc6h_flat(red: int, green: int, blue: int) -> bytes:
    """A BC6H block of one colour: mode 3 (two untransformed 10-bit endpoints), both endpoints the colour, every
    index 0."""
    colour = (red & 1023) | (green & 1023) << 10 | (blue & 1023) << 20
    return (3 | colour << 5 | colour << 35).to_bytes(16, "little")


# BC6H's probe: a block of one HDR colour above a black one (all zero: mode 0, zero endpoints). Unquantized and
# scaled as the specification says, 561 is the half float 0x43FE (3.99609375), 280 is 0x21F7 unsigned (0.011650)
# and 0x43EF (3.9667969) signed.
_HDR_TOP = {
    "DXGI95": (_bc6h_flat(561, 0, 280), (3.99609375, 0.0, 0.011650085)),
    "DXGI96": (_bc6h_flat(280, -280, 0), (3.9667969, -3.9667969, 0.0)),
}


@cache
def blender_decodes(family: str) -> bool:
    """Whether this Blender decodes the DDS format, top row first in the file and alpha as stored."""
    fmt = {
        "DXT1": "DXT1_ONEBITALPHA",
        "DXGI80": "BC4",
        "DXGI83": "BC5",
        "DXGI98": "BC7",
        "DXGI95": "BC6H_UF16",
        "DXGI96": "BC6H_SF16",
    }.get(family, family)
    data = _HDR_TOP[family][0] + bytes(16) if family in _HDR_TOP else _WHITE_BLACK[family]
    image = load(".io_ms3d_mdl_dds_probe", _Probe(fmt, 4, 8, data))
    try:
        image.alpha_mode = "CHANNEL_PACKED"
        if tuple(image.size) != (4, 8):
            return False
        pixels = np.empty(4 * 8 * 4, dtype=np.float32)
        image.pixels.foreach_get(pixels)
        rows = pixels.reshape(8, 4, 4)  # Blender's rows start at the bottom
        bottom, top = rows[:4], rows[4:]
        if family in _HDR_TOP:  # a float image, its values exact (within float rounding), black below
            expected = np.array(_HDR_TOP[family][1])
            return bool(
                image.is_float
                and np.allclose(top[..., :3], expected, rtol=1e-5, atol=1e-6)
                and (bottom[..., :3] == 0).all()
                and (rows[..., 3] == 1).all()
            )
        return bool((top[..., :2] > 0.99).all() and (bottom[..., :2] < 0.01).all() and (rows[..., 3] > 0.99).all())
    except RuntimeError:
        return False
    finally:
        bpy.data.images.remove(image)


@dataclass(frozen=True)
class _Probe:
    format: str
    width: int
    height: int
    data: bytes
