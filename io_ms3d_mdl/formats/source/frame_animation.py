"""Decode v49 frame-major animations (``STUDIO_FRAMEANIM``, CS:GO and its mods): notes §1.9.

Each section (or the whole animation) starts with ``mstudio_frame_anim_t {constantsoffset, frameoffset,
framelength, unused[3]}`` followed by one flag byte per bone. Per bone, in bone order, the engine takes one
rotation and one position, each from the first source its flags name (``ExtractSingleFrame``):

- rotation: ``ANIMROT`` Quaternion48 per frame, else ``ANIM_ROT2`` Quaternion48S per frame, else ``RAWROT``
  Quaternion48 constant, else ``CONST_ROT2`` Quaternion48S constant, else the bind pose (identity in a delta);
- position: ``ANIMPOS`` Vector48 per frame, else ``RAWPOS`` Vector48 constant, else ``FULLANIMPOS`` three floats
  per frame, else ``CONST_POS2`` three floats constant, else the bind pose (zero in a delta).

Constants are packed bone after bone (rotation, then position) at ``constantsoffset``; frame ``f`` is
``framelength`` bytes at ``frameoffset + f × framelength``, packed the same way. Values are absolute: unlike node
animations nothing is scaled or added to the bind pose. Every frame's bytes are read in one gather per kind of
channel (no per-frame loop); every offset is checked against the data before reading.
"""

from __future__ import annotations

import numpy as np

from ..binary import Cursor
from .animation_values import half_to_float, quaternion48_words

FRAME_RAWPOS, FRAME_RAWROT, FRAME_ANIMPOS, FRAME_ANIMROT = 0x01, 0x02, 0x04, 0x08
FRAME_FULLANIMPOS, FRAME_CONST_POS2, FRAME_CONST_ROT2, FRAME_ANIM_ROT2 = 0x10, 0x20, 0x40, 0x80
HEADER = np.dtype([("constantsoffset", "<i4"), ("frameoffset", "<i4"), ("framelength", "<i4"), ("unused", "<i4", 3)])

# Channel kinds, in the engine's order of precedence: (flag, stored per frame?, bytes, decoder name)
ROTATION_SOURCES = (
    (FRAME_ANIMROT, True, 6, "q48"),
    (FRAME_ANIM_ROT2, True, 6, "q48s"),
    (FRAME_RAWROT, False, 6, "q48"),
    (FRAME_CONST_ROT2, False, 6, "q48s"),
)
POSITION_SOURCES = (
    (FRAME_ANIMPOS, True, 6, "v48"),
    (FRAME_RAWPOS, False, 6, "v48"),
    (FRAME_FULLANIMPOS, True, 12, "f32"),
    (FRAME_CONST_POS2, False, 12, "f32"),
)
SCALE48S, SHIFT48S = 23168.0, 16384


def quaternion48s_words(words: np.ndarray) -> np.ndarray:
    """(N, 3) little-endian words of ``Quaternion48S`` ("smallest three") → (N, 4) wxyz.

    Each word holds a 15-bit component and one top bit: the top bits of the first two give the index (in x, y, z,
    w order) of the first stored component, the others follow cyclically, and the fourth, recreated from the unit
    norm, is negative when the third word's top bit is set."""
    words = np.asarray(words, dtype=np.int64).reshape(-1, 3)
    stored = ((words & 0x7FFF) - SHIFT48S) / SCALE48S
    first = ((words[:, 0] >> 15) << 1) | (words[:, 1] >> 15)
    largest = np.sqrt(np.maximum(0.0, 1.0 - np.einsum("ni,ni->n", stored, stored)))
    abcd = np.concatenate([stored, np.where(words[:, 2] >> 15 != 0, -largest, largest)[:, None]], axis=1)
    # component c of (x, y, z, w) is the ((c - first) mod 4)-th of a, b, c, d
    xyzw = np.take_along_axis(abcd, (np.arange(4) - first[:, None]) % 4, axis=1)
    return xyzw[:, [3, 0, 1, 2]]


DECODERS = {
    "q48": lambda raw: quaternion48_words(raw.view("<u2").reshape(-1, 3)),
    "q48s": lambda raw: quaternion48s_words(raw.view("<u2")),
    "v48": lambda raw: half_to_float(raw.view("<u2").reshape(-1, 3)),
    "f32": lambda raw: raw.view("<f4").reshape(-1, 3).astype(np.float64),
}


def _choose(flags: np.ndarray, sources: tuple) -> np.ndarray:
    """Per bone, the index of the first source its flags name, or -1 (the bind pose)."""
    return np.select([(flags & source[0]) != 0 for source in sources], list(range(len(sources))), -1)


def _sizes(choice: np.ndarray, sources: tuple, per_frame: bool) -> np.ndarray:
    table = np.array([size if frame == per_frame else 0 for _, frame, size, _ in sources] + [0])
    return table[choice]  # choice -1 picks the trailing 0


def decode_frame_section(
    cur: Cursor,
    offset: int,
    name: str,
    start: int,
    length: int,
    rotations: np.ndarray,
    positions: np.ndarray,
    animated: np.ndarray,
) -> None:
    """Write frames ``start..start+length`` of one section whose ``mstudio_frame_anim_t`` is at ``offset``.

    ``rotations``/``positions`` hold the bind pose (or identity) already: bones and channels without data keep it.
    """
    count = rotations.shape[1]
    (header,) = cur.array_at(HEADER, offset, 1, f"frame animation header of '{name}'")
    flags = cur.array_at(np.dtype("u1"), offset + HEADER.itemsize, count, f"per-bone flags of '{name}'")
    flags = flags.astype(np.int64)
    rot, pos = _choose(flags, ROTATION_SOURCES), _choose(flags, POSITION_SOURCES)
    frame_rot, frame_pos = _sizes(rot, ROTATION_SOURCES, True), _sizes(pos, POSITION_SOURCES, True)
    const_rot, const_pos = _sizes(rot, ROTATION_SOURCES, False), _sizes(pos, POSITION_SOURCES, False)
    # Each bone's data follows the previous bone's: rotation first, then position
    frame_at = np.cumsum(frame_rot + frame_pos) - (frame_rot + frame_pos)
    const_at = np.cumsum(const_rot + const_pos) - (const_rot + const_pos)
    frame_bytes, const_bytes = int((frame_rot + frame_pos).sum()), int((const_rot + const_pos).sum())

    frames = _frame_block(cur, offset, header, frame_bytes, length, name)
    constants = _block(cur, offset + int(header["constantsoffset"]), 1, const_bytes, const_bytes, name, "constants")
    for channel, choice, sources, at_rot in (
        (rotations, rot, ROTATION_SOURCES, True),
        (positions, pos, POSITION_SOURCES, False),
    ):
        for index, (_, per_frame, size, kind) in enumerate(sources):
            bones = np.flatnonzero(choice == index)
            if not len(bones):
                continue
            base = frame_at if per_frame else const_at
            at = base[bones] + (0 if at_rot else (frame_rot if per_frame else const_rot)[bones])
            block = frames if per_frame else constants
            raw = np.ascontiguousarray(block[:, at[:, None] + np.arange(size)])  # (rows, bones, size)
            values = DECODERS[kind](raw).reshape(raw.shape[0], len(bones), -1)
            channel[start : start + length, bones] = values  # a constant row broadcasts over the frames
    animated[(rot >= 0) | (pos >= 0)] = True


def _frame_block(cur: Cursor, offset: int, header: np.void, needed: int, length: int, name: str) -> np.ndarray:
    """The section's frames as a (length, needed) view, each row ``framelength`` bytes after the previous; an empty
    (1, 0) block when no bone has frame data (the frame fields are then unused and may be zero)."""
    if needed == 0:
        return np.zeros((1, 0), np.uint8)
    stride = int(header["framelength"])
    if stride < needed:
        raise cur.error(
            f"frame animation '{name}': frames of {stride} bytes cannot hold the {needed} bytes its bone flags name",
            offset + 8,
        )
    return _block(cur, offset + int(header["frameoffset"]), length, stride, needed, name, "frames")


def _block(cur: Cursor, at: int, rows: int, stride: int, used: int, name: str, what: str) -> np.ndarray:
    """The first ``used`` bytes of ``rows`` rows ``stride`` bytes apart, from ``at``: a read-only (rows, used) view
    (no copy), checked to lie inside the data first."""
    if used == 0:
        return np.zeros((1, 0), np.uint8)
    end = at + (rows - 1) * stride + used
    if at < 0 or end > cur.size:
        raise cur.error(
            f"{what} of frame animation '{name}': {rows} × {stride} bytes at offset {at} run past the end of the "
            f"{cur.size}-byte file",
            at,
        )
    view = np.frombuffer(cur.data, np.uint8, count=end - at, offset=at)
    return np.lib.stride_tricks.as_strided(view, (rows, used), (stride, 1), writeable=False)
