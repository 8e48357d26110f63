"""Images whose file lives only in the .blend: packed straight from bytes in memory (a DDS around VTF blocks, a
PNG of pixels we decoded), never written to disk, and decoded by Blender when first shown.

Pixels we decoded (PCX skins, VTF formats Blender has no decoder for) become a PNG written here rather than a
generated image that ``Image.pack()`` encodes. Blender's encoder uses the same zlib level but chooses a filter
for every row and writes through its image library; together with the float copy of the pixels it needs first
(about a tenth of it), that took 2–3 times as long on the samples' 256×256 and 512×512 textures. Ours leaves
rows unfiltered, which on those textures makes files 0.63–1.08 times the size; Blender decodes them to the same
bytes.
"""

from __future__ import annotations

import struct
import zlib

import bpy
import numpy as np

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PNG_RGBA8 = (8, 6)  # bit depth, colour type (truecolour with alpha)
ZLIB_LEVEL = 1  # the fastest that compresses, as Blender packs
# Palette images are a quarter of the bytes of RGBA and small (GoldSrc's are at most 512²): stored without
# compression they cost nothing to write, and a few hundred KB in the .blend (compressing took most of a model's
# import time).
INDEXED_ZLIB_LEVEL = 0


def packed_image(name: str, data: bytes) -> bpy.types.Image:
    """An image whose packed file is ``data`` (a file's bytes): nothing is decoded until the image is first
    shown or its size asked for, and nothing touches the disk."""
    image = bpy.data.images.new(name, 1, 1)  # the size is the packed file's once Blender reads it
    image.pack(data=data, data_len=len(data))
    image.source = "FILE"
    return image


def packed_png(name: str, rgba: np.ndarray) -> bpy.types.Image:
    """Decoded 8-bit pixels, top row first, packed as a PNG."""
    return packed_image(name, png_bytes(rgba))


def png_bytes(rgba: np.ndarray) -> bytes:
    """``rgba``: uint8, (height, width, 4), top row first (as PNG stores rows); each row gets filter byte 0."""
    if rgba.dtype != np.uint8 or rgba.ndim != 3 or rgba.shape[2] != 4 or not rgba.size:
        raise ValueError(f"expected (height, width, 4) uint8 pixels, not empty; got {rgba.shape} {rgba.dtype}")
    height, width = rgba.shape[:2]
    rows = np.zeros((height, width * 4 + 1), dtype=np.uint8)
    rows[:, 1:] = rgba.reshape(height, width * 4)
    header = struct.pack(">IIBBBBB", width, height, *PNG_RGBA8, 0, 0, 0)
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"IDAT", zlib.compress(rows, ZLIB_LEVEL))
        + _chunk(b"IEND", b"")
    )


def png_indexed_bytes(indices: np.ndarray, palette: np.ndarray) -> bytes:
    """``indices``: (height, width) uint8, top row first; ``palette``: (256, 4) uint8 RGBA. A palette PNG (colour
    type 3) with a transparency chunk when any entry is not opaque."""
    height, width = indices.shape
    if indices.dtype != np.uint8 or not indices.size or palette.shape != (256, 4):
        raise ValueError(f"expected (height, width) uint8 indices and a (256, 4) palette; got {indices.shape}")
    rows = np.zeros((height, width + 1), dtype=np.uint8)
    rows[:, 1:] = indices
    header = struct.pack(">IIBBBBB", width, height, 8, 3, 0, 0, 0)
    alpha = palette[:, 3]
    transparency = _chunk(b"tRNS", alpha.tobytes()) if (alpha != 255).any() else b""
    return (
        PNG_SIGNATURE
        + _chunk(b"IHDR", header)
        + _chunk(b"PLTE", np.ascontiguousarray(palette[:, :3]).tobytes())
        + transparency
        + _chunk(b"IDAT", zlib.compress(rows, INDEXED_ZLIB_LEVEL))
        + _chunk(b"IEND", b"")
    )


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(data, zlib.crc32(kind)))
