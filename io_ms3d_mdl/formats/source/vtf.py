"""Valve texture files (``.vtf`` 7.0–7.5): the largest mip level of the first frame (every face of a cube map),
decoded to RGBA8 with vectorised numpy, no per-pixel Python; block-compressed images can instead be kept as stored
(:class:`BlockImage`) for a host with its own decoder, such as Blender's DDS reader.

Formats: DXT1 (with its one-bit alpha), DXT3, DXT5, ATI1N and ATI2N (BC4, BC5), Strata Source's BC7 (70), BC6H (71,
and Titanfall's 66; HDR, decoded to float32 RGBA), BC5 (73) and BC4 (74), RGBA8888, ABGR8888, ARGB8888, BGRA8888,
BGRX8888, RGB888, BGR888 (and their blue-screen twins), RGB565, BGR565, BGRA4444, BGRA5551, BGRX5551, I8, IA88, A8,
UV88. BC4 reads as grey, BC5 as a normal map (blue rebuilt from red and green), as Blender shows both.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from ...access import read_file
from ..binary import Cursor
from .bc6h import decode_bc6h
from .bptc import BC7_A2, BC7_A3, BC7_P2, BC7_P3, BC7_WEIGHTS, bit_field, read_indices

HEADER = np.dtype(
    [
        ("signature", "S4"),
        ("version", "<u4", 2),
        ("header_size", "<u4"),
        ("width", "<u2"),
        ("height", "<u2"),
        ("flags", "<u4"),
        ("frames", "<u2"),
        ("first_frame", "<u2"),
        ("pad0", "u1", 4),
        ("reflectivity", "<f4", 3),
        ("pad1", "u1", 4),
        ("bumpmap_scale", "<f4"),
        ("format", "<i4"),
        ("mip_count", "u1"),
        ("low_format", "<i4"),
        ("low_width", "u1"),
        ("low_height", "u1"),
        ("depth", "<u2"),
        ("pad2", "u1", 3),
        ("num_resources", "<u4"),
        ("pad3", "u1", 8),
    ]
)
assert HEADER.itemsize == 80
RESOURCE = np.dtype([("tag", "V3"), ("flags", "u1"), ("offset", "<u4")])
TAG_HIGH_RES = b"\x30\x00\x00"
ENVMAP = 0x4000

# format id: (name, bytes per pixel; 0 for block-compressed). ARGB8888's bytes are G, B, A, R: Valve's quirk, read
# as VTFLib and srctools read it.
FORMATS = {
    0: ("RGBA8888", 4),
    1: ("ABGR8888", 4),
    2: ("RGB888", 3),
    3: ("BGR888", 3),
    4: ("RGB565", 2),
    5: ("I8", 1),
    6: ("IA88", 2),
    8: ("A8", 1),
    9: ("RGB888_BLUESCREEN", 3),
    10: ("BGR888_BLUESCREEN", 3),
    11: ("ARGB8888", 4),
    12: ("BGRA8888", 4),
    13: ("DXT1", 0),
    14: ("DXT3", 0),
    15: ("DXT5", 0),
    16: ("BGRX8888", 4),
    17: ("BGR565", 2),
    18: ("BGRX5551", 2),
    19: ("BGRA4444", 2),
    20: ("DXT1_ONEBITALPHA", 0),
    21: ("BGRA5551", 2),
    22: ("UV88", 2),
    # Alien Swarm and later (srctools reads 37/38 as these too, but there they collide with other formats)
    34: ("ATI2N", 0),
    35: ("ATI1N", 0),
    # Titanfall's BC6H: unsigned, as sourcepp (vtfpp ImageFormats: TITANFALL_BC6H = 66) decodes it
    66: ("BC6H_UF16", 0),
    # Strata Source's additions, numbered as sourcepp (vtfpp) reads them; 69 is R8 (not decoded). 71 is BC6H, the
    # signed variant (DXGI BC6H_SF16) in both the Strata wiki's VTF 7.6 page and sourcepp (STRATA_BC6H, decoded
    # signed); neither defines a 72.
    70: ("BC7", 0),
    71: ("BC6H_SF16", 0),
    73: ("BC5", 0),
    74: ("BC4", 0),
}
BLOCK_BYTES = {
    "DXT1": 8,
    "DXT1_ONEBITALPHA": 8,
    "DXT3": 16,
    "DXT5": 16,
    "ATI1N": 8,
    "ATI2N": 16,
    "BC4": 8,
    "BC5": 16,
    "BC7": 16,
    "BC6H_UF16": 16,
    "BC6H_SF16": 16,
}


BAND_BLOCKS = 8192  # blocks decoded at once (a band of 4-pixel rows): bounds the decoders' scratch memory


class UnsupportedTexture(Exception):
    """A texture that is valid but in a format this decoder does not handle (reported, never misdecoded)."""


class TextureTooLarge(UnsupportedTexture):
    """A texture whose every stored mip level is beyond the pixel budget (reported, not decoded)."""


@dataclass(frozen=True)
class BlockImage:
    """One block-compressed image as stored (rows of 4×4 blocks, top first), for a host that decodes blocks itself."""

    format: str  # a BLOCK_BYTES key
    width: int
    height: int
    data: bytes

    def decode(self) -> np.ndarray:
        """The same pixels in numpy: (height, width, 4) uint8 RGBA (float32 for HDR BC6H), top row first."""
        return decode(self.data, self.format, self.width, self.height)


@dataclass
class VtfImage:
    width: int
    height: int
    format: str
    faces: list[np.ndarray]  # each (height, width, 4) uint8 RGBA (float32 for BC6H), top row first
    flags: int
    blocks: list[BlockImage] = field(default_factory=list)  # the faces undecoded, when asked to keep blocks

    @property
    def face_count(self) -> int:
        return len(self.faces) or len(self.blocks)


def read_vtf(path: str | os.PathLike[str]) -> VtfImage:
    return read_vtf_bytes(read_file(path), os.fspath(path))


def level_size(fmt: str, width: int, height: int) -> int:
    if fmt in BLOCK_BYTES:
        return max(1, (width + 3) // 4) * max(1, (height + 3) // 4) * BLOCK_BYTES[fmt]
    return width * height * next(bpp for name, bpp in FORMATS.values() if name == fmt)


def image_start(header: np.void) -> int:
    """Where a 7.0–7.2 texture's image data starts: after its header and its low-resolution thumbnail."""
    low_fmt = int(header["low_format"])
    low = (
        level_size(FORMATS[low_fmt][0], int(header["low_width"]), int(header["low_height"]))
        if low_fmt in FORMATS
        else 0
    )
    return int(header["header_size"]) + low


def declared_bytes(head: bytes) -> int | None:
    """How long the VTF whose first bytes are ``head`` says it is (its image data's end: every mip level, frame,
    face and slice), or None when the header does not say. A ``.ttz`` is inflated only this far (``tth``)."""
    if len(head) < 80 or head[:4] != b"VTF\0":
        return None
    header = np.frombuffer(head[:80], HEADER, 1)[0]
    major, minor = (int(v) for v in header["version"])
    width, height, fmt_id = int(header["width"]), int(header["height"]), int(header["format"])
    if major != 7 or minor > 5 or fmt_id not in FORMATS or not (0 < width <= 32768 and 0 < height <= 32768):
        return None
    fmt, frames, mips = FORMATS[fmt_id][0], max(int(header["frames"]), 1), max(int(header["mip_count"]), 1)
    depth = max(int(header["depth"]), 1) if minor >= 2 else 1
    faces = 7 if int(header["flags"]) & ENVMAP else 1
    if minor >= 3:
        count = min(int(header["num_resources"]), 32)
        if len(head) < 80 + count * RESOURCE.itemsize:
            return None
        resources = np.frombuffer(head[80 : 80 + count * RESOURCE.itemsize], RESOURCE)
        starts = [int(r["offset"]) for r in resources]
        high = [int(r["offset"]) for r in resources if r["tag"].tobytes() == TAG_HIGH_RES]
        if not high:
            return None
        start = max(high[0], 0)
        others = max([o for o in starts if o > start], default=0)  # a resource stored after the image data
    else:
        start, others = image_start(header), 0
    image = sum(
        level_size(fmt, max(width >> m, 1), max(height >> m, 1)) * frames * faces * max(depth >> m, 1)
        for m in range(min(mips, 16))
    )
    return max(start + image, others + (1 << 16) if others else 0)


def read_vtf_bytes(
    data: bytes, path: str | None = None, max_pixels: int | None = None, keep_blocks: bool = False
) -> VtfImage:
    """The largest mip level (of at most ``max_pixels`` pixels over its decoded faces, when given). With
    ``keep_blocks``, block-compressed faces come back undecoded in ``blocks`` (``faces`` stays empty)."""
    cur = Cursor(data, path)
    if cur.size < 64 or bytes(cur.data[:4]) != b"VTF\0":
        raise cur.error(f"not a Valve texture: expected the identifier 'VTF', found {bytes(cur.data[:4])!r}", 0)
    raw = bytes(cur.data[: min(80, cur.size)]).ljust(80, b"\0")
    header = np.frombuffer(raw, HEADER, 1)[0]
    major, minor = (int(v) for v in header["version"])
    if major != 7 or minor > 5:
        raise cur.error(f"unsupported texture version {major}.{minor} (7.0 to 7.5 are supported)", 4)
    width, height, fmt_id = int(header["width"]), int(header["height"]), int(header["format"])
    if fmt_id not in FORMATS:
        raise UnsupportedTexture(f"image format {fmt_id} is not decoded")
    fmt = FORMATS[fmt_id][0]
    if not (0 < width <= 32768 and 0 < height <= 32768):
        raise cur.error(f"implausible texture size {width}×{height}", 16)
    flags, frames = int(header["flags"]), max(int(header["frames"]), 1)
    mips = max(int(header["mip_count"]), 1)
    depth = max(int(header["depth"]), 1) if minor >= 2 else 1
    faces = 1
    if flags & ENVMAP:
        faces = 6 if minor >= 5 or int(header["first_frame"]) == 0xFFFF else 7  # older cube maps add a sphere map
    if minor >= 3:
        resources = cur.array_at(RESOURCE, 80, min(int(header["num_resources"]), 32), "texture resources")
        high = [int(r["offset"]) for r in resources if r["tag"].tobytes() == TAG_HIGH_RES]
        if not high:
            raise cur.error("the texture has no image data resource", 68)
        start = high[0]
    else:
        start = image_start(header)
    level = 0
    if max_pixels is not None:
        fits = [m for m in range(mips) if max(width >> m, 1) * max(height >> m, 1) * min(faces, 6) <= max_pixels]
        if not fits:
            raise TextureTooLarge(
                f"{width}×{height} with {mips} mip level(s) is beyond the work budget of {max_pixels:,} pixels"
            )
        level = fits[0]
    # mips are stored smallest first; each holds every frame, face and slice
    before = sum(
        level_size(fmt, max(width >> m, 1), max(height >> m, 1)) * frames * faces * max(depth >> m, 1)
        for m in range(level + 1, mips)
    )
    width, height = max(width >> level, 1), max(height >> level, 1)
    per_image = level_size(fmt, width, height)
    image = VtfImage(width, height, fmt, [], flags)
    for face in range(min(faces, 6)):
        offset = start + before + face * depth * per_image
        block = cur.bytes_at(offset, per_image, f"image data of face {face}")
        if keep_blocks and fmt in BLOCK_BYTES:
            image.blocks.append(BlockImage(fmt, width, height, bytes(block)))
        else:
            image.faces.append(decode(block, fmt, width, height))
    return image


def decode(block: bytes, fmt: str, width: int, height: int) -> np.ndarray:
    """One image of ``fmt`` to (height, width, 4) RGBA8, or float32 RGBA for BC6H (HDR)."""
    if fmt in BLOCK_BYTES:
        return _decode_blocks(block, fmt, width, height)
    raw = np.frombuffer(block, np.uint8)
    rgba = np.full((width * height, 4), 255, dtype=np.uint8)
    if fmt in ("RGBA8888", "ABGR8888", "ARGB8888", "BGRA8888", "BGRX8888"):
        px = raw.reshape(-1, 4)
        order = {
            "RGBA8888": [0, 1, 2, 3],
            "ABGR8888": [3, 2, 1, 0],
            "ARGB8888": [3, 0, 1, 2],
            "BGRA8888": [2, 1, 0, 3],
            "BGRX8888": [2, 1, 0, 3],
        }[fmt]
        rgba[:] = px[:, order]
        if fmt == "BGRX8888":
            rgba[:, 3] = 255
    elif fmt in ("RGB888", "BGR888", "RGB888_BLUESCREEN", "BGR888_BLUESCREEN"):
        px = raw.reshape(-1, 3)
        rgba[:, :3] = px if fmt.startswith("RGB") else px[:, ::-1]
        if fmt.endswith("BLUESCREEN"):  # pure blue marks transparency
            rgba[(rgba[:, 0] == 0) & (rgba[:, 1] == 0) & (rgba[:, 2] == 255)] = 0
    elif fmt in ("I8", "A8"):
        if fmt == "I8":
            rgba[:, :3] = raw[:, None]
        else:
            rgba[:, :3] = 0
            rgba[:, 3] = raw
    elif fmt == "IA88":
        px = raw.reshape(-1, 2)
        rgba[:, :3], rgba[:, 3] = px[:, :1], px[:, 1]
    elif fmt == "UV88":
        px = raw.reshape(-1, 2)
        rgba[:, 0], rgba[:, 1], rgba[:, 2] = px[:, 0], px[:, 1], 0
    else:
        v = np.frombuffer(block, "<u2").astype(np.uint32)
        if fmt in ("RGB565", "BGR565"):
            hi, mid, lo = _expand(v >> 11, 5), _expand((v >> 5) & 63, 6), _expand(v & 31, 5)
            rgba[:, 0], rgba[:, 1], rgba[:, 2] = (lo, mid, hi) if fmt == "RGB565" else (hi, mid, lo)
        elif fmt == "BGRA4444":
            rgba[:, 3], rgba[:, 0] = _expand(v >> 12, 4), _expand((v >> 8) & 15, 4)
            rgba[:, 1], rgba[:, 2] = _expand((v >> 4) & 15, 4), _expand(v & 15, 4)
        else:  # BGRA5551 / BGRX5551
            rgba[:, 0], rgba[:, 1], rgba[:, 2] = (
                _expand((v >> 10) & 31, 5),
                _expand((v >> 5) & 31, 5),
                _expand(v & 31, 5),
            )
            rgba[:, 3] = np.where(v >> 15, 255, 0) if fmt == "BGRA5551" else 255
    return rgba.reshape(height, width, 4)


def _expand(value: np.ndarray, bits: int) -> np.ndarray:
    """An n-bit channel to 8 bits by bit replication (31 → 255, 16 → 132)."""
    value = value.astype(np.uint32)
    return ((value << (8 - bits)) | (value >> (2 * bits - 8))).astype(np.uint8)


def _colors(c0: np.ndarray, c1: np.ndarray, four_always: bool, transparent: bool) -> np.ndarray:
    """The 4-entry RGBA palette of each DXT colour block (nb, 4, 4). In three-colour blocks index 3 is black, and
    transparent only in the one-bit-alpha format (plain DXT1 has no alpha)."""

    def rgb(c: np.ndarray) -> np.ndarray:
        return np.stack([_expand(c >> 11, 5), _expand((c >> 5) & 63, 6), _expand(c & 31, 5)], axis=-1).astype(np.uint16)

    a, b = rgb(c0), rgb(c1)
    four = (c0 > c1) | four_always
    palette = np.empty((len(c0), 4, 4), dtype=np.uint8)
    palette[:, 0, :3], palette[:, 1, :3] = a, b
    palette[:, :, 3] = 255
    palette[:, 2, :3] = np.where(four[:, None], (2 * a + b) // 3, (a + b) // 2)
    palette[:, 3, :3] = np.where(four[:, None], (a + 2 * b) // 3, 0)
    if transparent:
        palette[~four, 3, 3] = 0
    return palette


def _decode_blocks(block: bytes, fmt: str, width: int, height: int) -> np.ndarray:
    """Any block-compressed image: per-block pixels (k, 16, 4), laid out as rows of 4×4 tiles, a band of block rows
    at a time straight into the image, so the decoders' scratch (bits, indices, endpoints: many times the pixels
    they make) stays bounded whatever the texture's size, and memory follows the image made."""
    bw, bh = max(1, (width + 3) // 4), max(1, (height + 3) // 4)
    blocks = np.frombuffer(block, np.uint8).reshape(bh, bw, BLOCK_BYTES[fmt])
    hdr = fmt.startswith("BC6H")
    image = np.empty((height, width, 4), np.float32 if hdr else np.uint8)
    band = max(1, BAND_BLOCKS // bw)
    for top in range(0, bh, band):
        rows = blocks[top : top + band].reshape(-1, BLOCK_BYTES[fmt])
        if fmt == "BC7":
            pixels = _decode_bc7(rows)
        elif hdr:
            pixels = decode_bc6h(rows, signed=fmt == "BC6H_SF16")
        elif fmt in ("ATI1N", "BC4", "ATI2N", "BC5"):
            pixels = _decode_bc4_bc5(rows)
        else:
            pixels = _decode_dxt(rows, fmt)
        count = len(rows) // bw
        tiles = pixels.reshape(count, bw, 4, 4, 4).transpose(0, 2, 1, 3, 4).reshape(count * 4, bw * 4, 4)
        y = 4 * top
        image[y : y + 4 * count] = tiles[: height - y, :width]
    return image


def _decode_dxt(blocks: np.ndarray, fmt: str) -> np.ndarray:
    size = blocks.shape[1]
    color = blocks[:, size - 8 :]
    c0 = color[:, 0].astype(np.uint32) | color[:, 1].astype(np.uint32) << 8
    c1 = color[:, 2].astype(np.uint32) | color[:, 3].astype(np.uint32) << 8
    bits = color[:, 4:8].copy().view("<u4")[:, 0]
    index = (bits[:, None] >> (2 * np.arange(16, dtype=np.uint32))) & 3  # (nb, 16), row-major in the block
    palette = _colors(c0, c1, four_always=fmt in ("DXT3", "DXT5"), transparent=fmt == "DXT1_ONEBITALPHA")
    # one gather of whole RGBA pixels (as uint32) from the flattened palettes
    first = (np.arange(len(blocks), dtype=np.int64) * 4)[:, None]
    packed = palette.reshape(-1, 4).copy().view(np.uint32).ravel()
    pixels = packed[first + index].view(np.uint8).reshape(len(blocks), 16, 4).copy()
    if fmt == "DXT3":
        nibbles = blocks[:, :8]
        alpha = np.stack([nibbles & 15, nibbles >> 4], axis=-1).reshape(-1, 16)
        pixels[:, :, 3] = alpha * 17
    elif fmt == "DXT5":
        pixels[:, :, 3] = _single_channel(blocks[:, :8])
    return pixels


def _single_channel(blocks: np.ndarray, bias: int = 0) -> np.ndarray:
    """(nb, 8) blocks of one 8-bit channel (DXT5's alpha, BC4, each half of BC5) to (nb, 16) values. Decoders round
    the interpolated values differently: ``bias`` 0 truncates (srctools, Pillow), 1 is Blender's."""
    a0, a1 = blocks[:, 0].astype(np.int32), blocks[:, 1].astype(np.int32)
    # 48 bits of 3-bit indices, read as two 24-bit halves of eight pixels each (uint32 arithmetic)
    half = blocks[:, 2:8].astype(np.uint32).reshape(-1, 2, 3)
    halves = half[:, :, 0] | half[:, :, 1] << 8 | half[:, :, 2] << 16  # (nb, 2)
    shifts = np.uint32(3) * np.arange(8, dtype=np.uint32)
    index = ((halves[:, :, None] >> shifts) & np.uint32(7)).reshape(-1, 16)
    table = np.empty((len(blocks), 8), dtype=np.int32)
    table[:, 0], table[:, 1] = a0, a1
    eight = (a0 > a1)[:, None]
    steps = np.arange(1, 7)
    table[:, 2:8] = np.where(eight, ((7 - steps) * a0[:, None] + steps * a1[:, None] + bias) // 7, 0)
    five = np.arange(1, 5)
    six_table = ((5 - five) * a0[:, None] + five * a1[:, None] + bias) // 5
    table[:, 2:6] = np.where(eight, table[:, 2:6], six_table)
    table[:, 6:8] = np.where(eight, table[:, 6:8], np.array([0, 255]))
    rows = (np.arange(len(blocks), dtype=np.int64) * 8)[:, None]
    return table.astype(np.uint8).ravel()[rows + index.astype(np.int64)]


def _decode_bc4_bc5(blocks: np.ndarray) -> np.ndarray:
    """BC4 (8-byte blocks) as grey; BC5 (16) as a tangent-space normal map: red and green are X and Y, blue is the
    Z that makes the normal unit length (what the engine's shaders and Blender's DDS reader compute). Rounded as
    Blender rounds, so this fallback gives Blender's pixels exactly: Z is steep near the rim, where a difference of
    1 in X or Y moves it by up to 14."""
    pixels = np.full((len(blocks), 16, 4), 255, dtype=np.uint8)
    red = _single_channel(blocks[:, :8], bias=1)
    if blocks.shape[1] == 8:
        pixels[:, :, :3] = red[:, :, None]
        return pixels
    green = _single_channel(blocks[:, 8:], bias=1)
    # in float32 and truncated, as OpenImageIO (Blender's DDS reader) computes it
    x, y = np.float32(2.0) * (red / np.float32(255.0)) - 1, np.float32(2.0) * (green / np.float32(255.0)) - 1
    z = np.sqrt(np.maximum(1 - x * x - y * y, np.float32(0.0)))
    pixels[:, :, 0], pixels[:, :, 1] = red, green
    pixels[:, :, 2] = (np.float32(255.0) * (z + 1) / 2).astype(np.uint8)
    return pixels


# BC7, as the Khronos ARB_texture_compression_bptc specification defines it (DirectX's BC7 is the same format).
# Per mode (Table.M): subsets, partition bits, rotation bits, index selection bits, colour bits, alpha bits,
# endpoint p-bits, shared p-bits, index bits, secondary index bits.
BC7_MODES = (
    (3, 4, 0, 0, 4, 0, 1, 0, 3, 0),
    (2, 6, 0, 0, 6, 0, 0, 1, 3, 0),
    (3, 6, 0, 0, 5, 0, 0, 0, 2, 0),
    (2, 6, 0, 0, 7, 0, 1, 0, 2, 0),
    (1, 0, 2, 1, 5, 6, 0, 0, 2, 3),
    (1, 0, 2, 0, 7, 8, 0, 0, 2, 2),
    (1, 0, 0, 0, 7, 7, 1, 0, 4, 0),
    (2, 6, 0, 0, 5, 5, 1, 0, 2, 0),
)


def _decode_bc7(blocks: np.ndarray) -> np.ndarray:
    """(nb, 16) BC7 blocks to (nb, 16, 4) RGBA8, one vectorised pass per mode. The mode is the lowest set bit; a
    block without one is reserved and decodes to transparent black, as the specification asks."""
    bits = np.unpackbits(blocks, axis=1, bitorder="little")
    low = bits[:, :8]
    mode = np.where(low.any(axis=1), low.argmax(axis=1), 8)
    pixels = np.zeros((len(blocks), 16, 4), dtype=np.uint8)
    for m in np.unique(mode).tolist():
        if m < 8:
            chosen = mode == m
            pixels[chosen] = _bc7_mode(bits[chosen], m)
    return pixels


def _bc7_mode(bits: np.ndarray, mode: int) -> np.ndarray:
    subsets, pb, rb, isb, cb, ab, epb, spb, ib, ib2 = BC7_MODES[mode]
    pos = mode + 1
    partition, rotation = bit_field(bits, pos, pb), bit_field(bits, pos + pb, rb)
    selector = bit_field(bits, pos + pb + rb, isb)
    pos += pb + rb + isb
    ends, pos = _bc7_endpoints(bits, pos, subsets, cb, ab, epb, spb)
    subset = np.zeros((len(bits), 16), dtype=np.int64)
    anchors = np.zeros((len(bits), 16), dtype=bool)
    anchors[:, 0] = True
    rows = np.arange(len(bits))
    if subsets == 2:
        subset = BC7_P2[partition]
        anchors[rows, BC7_A2[partition]] = True
    elif subsets == 3:
        subset = BC7_P3[partition]
        anchors[rows, BC7_A3[0][partition]] = True
        anchors[rows, BC7_A3[1][partition]] = True
    primary = BC7_WEIGHTS[ib][read_indices(bits, pos, ib, anchors)]
    colour = alpha = primary
    if ib2:
        secondary = BC7_WEIGHTS[ib2][read_indices(bits, pos + 16 * ib - 1, ib2, anchors)]
        swap = (selector == 1)[:, None]
        colour, alpha = np.where(swap, secondary, primary), np.where(swap, primary, secondary)
    chosen = ends[rows[:, None], subset]  # (k, 16, 2, 4): each pixel's pair of endpoints
    weight = np.stack([colour, colour, colour, alpha], axis=-1)
    pixels = ((64 - weight) * chosen[:, :, 0] + weight * chosen[:, :, 1] + 32) >> 6
    for r in (1, 2, 3):  # rotation: alpha swapped with red, green or blue
        turned = rotation == r
        pixels[turned, :, r - 1], pixels[turned, :, 3] = pixels[turned, :, 3], pixels[turned, :, r - 1]
    return pixels.astype(np.uint8)


def _bc7_endpoints(
    bits: np.ndarray, pos: int, subsets: int, cb: int, ab: int, epb: int, spb: int
) -> tuple[np.ndarray, int]:
    """(k, subsets, 2, 4) endpoints expanded to 8 bits (alpha 255 in modes without it), and the next bit."""
    ends = np.zeros((len(bits), subsets, 2, 4), dtype=np.int32)
    channels = 4 if ab else 3
    for c in range(channels):
        width = cb if c < 3 else ab
        for s in range(subsets):
            for e in range(2):
                ends[:, s, e, c] = bit_field(bits, pos, width)
                pos += width
    sizes = [cb, cb, cb, ab]
    if epb or spb:
        for s in range(subsets):
            for e in range(2):
                ends[:, s, e, :channels] = ends[:, s, e, :channels] << 1 | bits[:, pos, None]
                pos += epb
            pos += spb
        sizes = [n + 1 for n in sizes]
    for c in range(channels):
        n = sizes[c]
        ends[..., c] = ends[..., c] << (8 - n) | ends[..., c] >> (2 * n - 8)
    if not ab:
        ends[..., 3] = 255
    return ends, pos
