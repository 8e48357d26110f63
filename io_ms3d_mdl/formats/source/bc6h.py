"""BC6H (BPTC_FLOAT): HDR RGB in 16-byte blocks of 4×4 pixels, decoded to half floats with vectorised numpy, one
pass per mode over all its blocks (no per-pixel Python).

Written from the Khronos ARB_texture_compression_bptc specification (Tables MF and F; DirectX's BC6H is the same
format), sharing BC7's two-subset partitions, anchors, weights and index reader: the mode is the low two bits, or
the low five when those are 2 or 3; a mode's header scatters the endpoint bits (Table F), its endpoints may be a
base and deltas (transformed), are unquantized to 16 bits, interpolated with 6-bit weights, and the result scaled
by 31/64 (unsigned) or 31/32 (signed, as sign and magnitude) is the bit pattern of a half float.
"""

from __future__ import annotations

import re

import numpy as np

from .bptc import BC7_A2, BC7_P2, BC7_WEIGHTS, read_indices

# Table MF, per mode number: transformed endpoints, subsets, endpoint bits, delta bits (red, green, blue).
MODES = {
    0: (True, 2, 10, (5, 5, 5)),
    1: (True, 2, 7, (6, 6, 6)),
    2: (True, 2, 11, (5, 4, 4)),
    6: (True, 2, 11, (4, 5, 4)),
    10: (True, 2, 11, (4, 4, 5)),
    14: (True, 2, 9, (5, 5, 5)),
    18: (True, 2, 8, (6, 5, 5)),
    22: (True, 2, 8, (5, 6, 5)),
    26: (True, 2, 8, (5, 5, 6)),
    30: (False, 2, 6, (6, 6, 6)),
    3: (False, 1, 10, (10, 10, 10)),
    7: (True, 1, 11, (9, 9, 9)),
    11: (True, 1, 12, (8, 8, 8)),
    15: (True, 1, 16, (4, 4, 4)),
}
# Table F: where each header bit goes, least significant block bit first. ``v[a:b]`` takes |a-b|+1 bits into
# bits b, b±1, … a of v (so ``[9:0]`` fills upwards from bit 0, ``[10:15]`` downwards from bit 15).
LAYOUTS = {
    0: "m[1:0] g2[4] b2[4] b3[4] r0[9:0] g0[9:0] b0[9:0] r1[4:0] g3[4] g2[3:0] g1[4:0] b3[0] g3[3:0] b1[4:0] "
    "b3[1] b2[3:0] r2[4:0] b3[2] r3[4:0] b3[3]",
    1: "m[1:0] g2[5] g3[4] g3[5] r0[6:0] b3[0] b3[1] b2[4] g0[6:0] b2[5] b3[2] g2[4] b0[6:0] b3[3] b3[5] b3[4] "
    "r1[5:0] g2[3:0] g1[5:0] g3[3:0] b1[5:0] b2[3:0] r2[5:0] r3[5:0]",
    2: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[4:0] r0[10] g2[3:0] g1[3:0] g0[10] b3[0] g3[3:0] b1[3:0] b0[10] b3[1] "
    "b2[3:0] r2[4:0] b3[2] r3[4:0] b3[3]",
    6: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[3:0] r0[10] g3[4] g2[3:0] g1[4:0] g0[10] g3[3:0] b1[3:0] b0[10] b3[1] "
    "b2[3:0] r2[3:0] b3[0] b3[2] r3[3:0] g2[4] b3[3]",
    10: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[3:0] r0[10] b2[4] g2[3:0] g1[3:0] g0[10] b3[0] g3[3:0] b1[4:0] b0[10] "
    "b2[3:0] r2[3:0] b3[1] b3[2] r3[3:0] b3[4] b3[3]",
    14: "m[4:0] r0[8:0] b2[4] g0[8:0] g2[4] b0[8:0] b3[4] r1[4:0] g3[4] g2[3:0] g1[4:0] b3[0] g3[3:0] b1[4:0] "
    "b3[1] b2[3:0] r2[4:0] b3[2] r3[4:0] b3[3]",
    18: "m[4:0] r0[7:0] g3[4] b2[4] g0[7:0] b3[2] g2[4] b0[7:0] b3[3] b3[4] r1[5:0] g2[3:0] g1[4:0] b3[0] "
    "g3[3:0] b1[4:0] b3[1] b2[3:0] r2[5:0] r3[5:0]",
    22: "m[4:0] r0[7:0] b3[0] b2[4] g0[7:0] g2[5] g2[4] b0[7:0] g3[5] b3[4] r1[4:0] g3[4] g2[3:0] g1[5:0] "
    "g3[3:0] b1[4:0] b3[1] b2[3:0] r2[4:0] b3[2] r3[4:0] b3[3]",
    26: "m[4:0] r0[7:0] b3[1] b2[4] g0[7:0] b2[5] g2[4] b0[7:0] b3[5] b3[4] r1[4:0] g3[4] g2[3:0] g1[4:0] "
    "b3[0] g3[3:0] b1[5:0] b2[3:0] r2[4:0] b3[2] r3[4:0] b3[3]",
    30: "m[4:0] r0[5:0] g3[4] b3[0] b3[1] b2[4] g0[5:0] g2[5] b2[5] b3[2] g2[4] b0[5:0] g3[5] b3[3] b3[5] b3[4] "
    "r1[5:0] g2[3:0] g1[5:0] g3[3:0] b1[5:0] b2[3:0] r2[5:0] r3[5:0]",
    3: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[9:0] g1[9:0] b1[9:0]",
    7: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[8:0] r0[10] g1[8:0] g0[10] b1[8:0] b0[10]",
    11: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[7:0] r0[10:11] g1[7:0] g0[10:11] b1[7:0] b0[10:11]",
    15: "m[4:0] r0[9:0] g0[9:0] b0[9:0] r1[3:0] r0[10:15] g1[3:0] g0[10:15] b1[3:0] b0[10:15]",
}
CHUNK = 16384  # blocks decoded at once: a 512×512 area, about 40 MB of scratch
PARTITION_BITS = 5  # two-subset blocks: after the header, the partition (the first 32 of BC7's), then the indices


def _header_weights(layout: str) -> np.ndarray:
    """(header bits, 12) matrix: block bits @ it gives endpoint channels r0 g0 b0 r1 … b3 (channel 3e+c)."""
    steps: list[tuple[int, int]] = []  # (channel or -1 for mode bits, destination bit) per block bit
    for name, high, low in re.findall(r"(\w\d?)\[(\d+)(?::(\d+))?\]", layout):
        a, b = int(high), int(low or high)
        channel = -1 if name == "m" else 3 * int(name[1]) + "rgb".index(name[0])
        steps += [(channel, bit) for bit in range(b, a + (1 if a >= b else -1), 1 if a >= b else -1)]
    weights = np.zeros((len(steps), 12), dtype=np.float32)
    for position, (channel, bit) in enumerate(steps):
        if channel >= 0:
            weights[position, channel] = 1 << bit
    return weights


HEADERS = {mode: _header_weights(layout) for mode, layout in LAYOUTS.items()}
assert all(len(HEADERS[m]) == (65 if MODES[m][1] == 1 else 77) for m in MODES)


def decode_bc6h(blocks: np.ndarray, signed: bool) -> np.ndarray:
    """(nb, 16) BC6H blocks to (nb, 16, 4) float32 RGBA (alpha 1), pixels x-major in the block. A block in a
    reserved mode (19, 23, 27, 31) decodes to black, as the specification asks."""
    pixels = np.ones((len(blocks), 16, 4), dtype=np.float32)
    for first in range(0, len(blocks), CHUNK):  # bounded scratch memory, whatever the texture's size
        pixels[first : first + CHUNK, :, :3] = _decode_chunk(blocks[first : first + CHUNK], signed)
    return pixels


def _decode_chunk(blocks: np.ndarray, signed: bool) -> np.ndarray:
    """(k, 16, 3) float16 RGB of k blocks, each mode's blocks in one pass."""
    bits = np.unpackbits(blocks, axis=1, bitorder="little")
    low2 = bits[:, 0].astype(np.int32) | bits[:, 1].astype(np.int32) << 1
    low5 = low2 | bits[:, 2:5].astype(np.int32) @ np.array([4, 8, 16], dtype=np.int32)
    mode = np.where(low2 < 2, low2, low5)
    halves = np.zeros((len(blocks), 16, 3), dtype=np.uint16)
    for m in np.unique(mode).tolist():
        if m in MODES:
            chosen = mode == m
            halves[chosen] = _decode_mode(bits[chosen], m, signed)
    return halves.view(np.float16)


def _decode_mode(bits: np.ndarray, mode: int, signed: bool) -> np.ndarray:
    """(k, 16, 3) half-float bit patterns of k blocks of one mode."""
    transformed, subsets, epb, deltas = MODES[mode]
    header = HEADERS[mode]
    # (a float32 product is exact here, every sum being below 2**17, and much faster than an integer one)
    ends = (bits[:, : len(header)].astype(np.float32) @ header).astype(np.int64).reshape(-1, 4, 3)[:, : 2 * subsets]
    widths = np.array(deltas)
    if signed:
        ends[:, 0] = _sign_extend(ends[:, 0], epb)
    if signed or transformed:
        ends[:, 1:] = _sign_extend(ends[:, 1:], widths if transformed else epb)
    if transformed:  # the others are deltas from the first endpoint, wrapped to the endpoint bits
        ends[:, 1:] = (ends[:, :1] + ends[:, 1:]) & ((1 << epb) - 1)
        if signed:
            ends[:, 1:] = _sign_extend(ends[:, 1:], epb)
    # 16-bit endpoints: int32 holds every step below (at most 2**16 × 64 × 31)
    ends = _unquantize(ends, epb, signed).astype(np.int32).reshape(-1, subsets, 2, 3)
    anchors = np.zeros((len(bits), 16), dtype=bool)
    anchors[:, 0] = True
    if subsets == 2:
        start = len(header) + PARTITION_BITS
        partition = bits[:, len(header) : start].astype(np.int64) @ (1 << np.arange(PARTITION_BITS))
        anchors[np.arange(len(bits)), BC7_A2[partition]] = True
        ends = np.take_along_axis(ends, BC7_P2[partition][:, :, None, None], axis=1)  # each pixel's endpoints
        index_bits = 3
    else:
        start, index_bits = len(header), 4
    index = read_indices(bits, start, index_bits, anchors)
    weight = BC7_WEIGHTS[index_bits].astype(np.int32)[index][..., None]
    value = (ends[:, :, 0] * (64 - weight) + ends[:, :, 1] * weight + 32) >> 6
    return _finish(value, signed)


def _sign_extend(value: np.ndarray, bits: int | np.ndarray) -> np.ndarray:
    """Two's complement of ``bits`` bits (per channel when an array) to a signed integer."""
    top = np.left_shift(1, np.asarray(bits) - 1)
    return ((value & (2 * top - 1)) ^ top) - top


def _unquantize(x: np.ndarray, epb: int, signed: bool) -> np.ndarray:
    """Endpoints of ``epb`` bits spread over the 16-bit range (sign and magnitude when signed)."""
    if not signed:
        if epb >= 15:
            return x
        spread = ((x << 15) + 0x4000) >> (epb - 1)
        return np.where(x == 0, 0, np.where(x == (1 << epb) - 1, 0xFFFF, spread))
    if epb >= 16:
        return x
    magnitude = np.abs(x)
    spread = ((magnitude << 15) + 0x4000) >> (epb - 1)
    spread = np.where(magnitude == 0, 0, np.where(magnitude >= (1 << (epb - 1)) - 1, 0x7FFF, spread))
    return np.where(x < 0, -spread, spread)


def _finish(value: np.ndarray, signed: bool) -> np.ndarray:
    """Interpolated values to half-float bit patterns: ×31/64 unsigned; signed, the magnitude ×31/32 and the
    sign bit, unless the magnitude became 0 (+0, as Microsoft's reference decoder gives, not Khronos' -0)."""
    if not signed:
        return ((value * 31) >> 6).astype(np.uint16)
    magnitude = (np.abs(value) * 31) >> 5
    return (magnitude | np.where((value < 0) & (magnitude > 0), 0x8000, 0)).astype(np.uint16)
