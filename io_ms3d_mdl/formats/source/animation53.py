"""Decode Titanfall 2 (MDL v53) animations into the arrays the 44–49 decoder produces.

Respawn replaced Valve's 4-byte bone nodes with 32-byte per-bone headers; the layout below is what Crowbar's
``SourceMdlFile53`` reader and v53 SMD writer and rsx's Titanfall 2 studio headers and ``CalcBone*`` agree on:

- the descriptor's ``animindex`` (or, with ``sectionframes`` set, a table of one int32 ``animindex`` per section,
  the last frame of a long animation alone in section ``(numframes − 1) // sectionframes + 1``) points, relative
  to the descriptor, at a list of headers ``{float posscale; u8 bone; u8 flags; u16 unused; 8 bytes rotation;
  6 bytes position; 6 bytes scale; int32 nextoffset}``, ending at bone 255 or a ``nextoffset`` of 0;
- flags: 0x01 delta, 0x02 raw position (Vector48), 0x04 raw rotation (Quaternion64), 0x08 raw scale (Vector48),
  0x10 no rotation (the bind pose, identity in a delta);
- a channel that is not raw holds three int16 offsets, relative to its own field (≤ 0: the axis is 0), of
  ``mstudioanimvalue_t`` streams: Euler angles × the bone's ``rotscale`` (plus its ``rot`` unless delta),
  positions × the header's own ``posscale`` (plus the bone's ``pos``), scales × the bone's ``scalescale`` (plus
  its ``scale``);
- like the game, bones are matched in increasing order: a header whose bone does not follow the previous one is
  never reached.

Scale is decoded but not kept (actions carry rotation and location only): a non-unit scale is reported once.
"""

from __future__ import annotations

import struct

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from ..binary import Cursor
from . import structs as S
from .animation_streams import gather, value_tracks
from .animation_values import euler_to_quaternion, half_to_float, quaternion64_words
from .decoded_animation import (
    BONE_FIXED_ALIGNMENT,
    CHUNK_VALUES,
    IDENTITY,
    MAX_FRAMES,
    DecodedAnimation,
    fill_rest_pose,
    section_spans,
)
from .model import MdlAnimation, MdlFile

DELTA, RAWPOS, RAWROT, RAWSCALE, NOROT = 0x01, 0x02, 0x04, 0x08, 0x10
HEADER = np.dtype(
    [
        ("posscale", "<f4"),
        ("bone", "u1"),
        ("flags", "u1"),
        ("unused", "<u2"),
        ("rot", "V8"),  # Quaternion64, or three stream offsets (and 2 unused bytes)
        ("pos", "<u2", 3),  # Vector48, or three stream offsets
        ("scale", "<u2", 3),  # Vector48, or three stream offsets
        ("nextoffset", "<i4"),
    ]
)
ROT_AT, POS_AT, SCALE_AT = (HEADER.fields[name][1] for name in ("rot", "pos", "scale"))
NEXT = struct.Struct("<i")
SECTION = np.dtype("<i4")  # mstudioanimsections_t of v53: the animation block is gone
SCALE_TOLERANCE = 1e-3
assert HEADER.itemsize == 32 and (ROT_AT, POS_AT, SCALE_AT) == (8, 16, 22)


def decode_v53_animation(mdl: MdlFile, index: int) -> DecodedAnimation:
    anim = mdl.animations[index]
    frames = anim.num_frames
    if not 0 < frames <= MAX_FRAMES:
        raise FormatError(mdl.path, anim.offset, f"animation '{anim.name}' declares {frames} frames")
    count = len(mdl.bones)
    current_budget().check(
        mdl.path, f"frames × bones of animation '{anim.name}'", frames * count, current_budget().animation_bone_frames
    )
    cur = Cursor(mdl.data, mdl.path)
    bones = _bones_with_scale(cur, mdl)
    delta = anim.is_delta
    rotations = np.empty((frames, count, 4))
    positions = np.empty((frames, count, 3))
    fill_rest_pose(bones, delta, rotations, positions)
    animated = np.zeros(count, dtype=bool)
    scaled = 0.0  # the largest departure from a neutral scale seen
    for section, start, length in section_spans(anim, respawn=True):
        at = _reached(_walk(cur, _data_offset(cur, anim, section), count, anim.name))
        chunk = max(1, CHUNK_VALUES // length)  # bounds the temporaries of a long section
        for first in range(0, len(at), chunk):
            part = at[first : first + chunk]
            headers = gather(cur, part, HEADER.itemsize, "bone header").view(HEADER)[:, 0]
            scaled = max(scaled, _decode(cur, part, headers, bones, start, length, rotations, positions, animated))
    decoded = DecodedAnimation(anim.name, anim.fps if anim.fps > 0 else 30.0, delta, rotations, positions, animated)
    if scaled > SCALE_TOLERANCE:
        decoded.notes.append(
            f"animation '{anim.name}' scales bones (by up to {scaled:.3g} away from their size); bone scale is not "
            "imported, so those bones keep their size"
        )
    return decoded


def _bones_with_scale(cur: Cursor, mdl: MdlFile) -> np.ndarray:
    """The v53 bone records as stored: the 44–49 records ``mdl.bones`` holds have no scale or ``scalescale``."""
    (header,) = cur.array_at(S.STUDIOHDR53, 0, 1, "version 53 studiohdr_t header")
    return cur.array_at(S.BONE53, int(header["boneindex"]), len(mdl.bones), "bones")


def _data_offset(cur: Cursor, anim: MdlAnimation, section: int) -> int:
    if anim.section_frames > 0:
        where = anim.offset + anim.section_index + SECTION.itemsize * section
        index = int(cur.array_at(SECTION, where, 1, f"section {section} of animation '{anim.name}'")[0])
    else:
        where, index = anim.offset + S.ANIMDESC53.fields["animindex"][1], anim.anim_index
    if index == 0:
        raise cur.error(f"animation '{anim.name}': data offset 0 points at its own descriptor", where)
    return anim.offset + index


def _walk(cur: Cursor, offset: int, count: int, name: str) -> tuple[np.ndarray, np.ndarray]:
    """The list's (bone, header offset) pairs in file order, up to bone 255 or a ``nextoffset`` of 0. One small
    read per header (a list cannot be walked in bulk); at most one more header than bones is read."""
    bones, offsets = [], []
    while len(bones) <= count:
        if offset < 0 or offset + HEADER.itemsize > cur.size:
            raise cur.error(
                f"bone header of animation '{name}': 32 bytes at offset {offset} run past the end of the "
                f"{cur.size}-byte file",
                offset,
            )
        bone = cur.data[offset + 4]
        if bone == 255:
            break
        if bone >= count:
            raise cur.error(f"animation '{name}' animates bone {bone} of {count}", offset + 4)
        bones.append(bone)
        offsets.append(offset)
        (step,) = NEXT.unpack_from(cur.data, offset + 28)
        if step == 0:
            break
        if step < HEADER.itemsize:
            raise cur.error(
                f"animation '{name}': the next bone header is {step} bytes on, inside or before this one", offset + 28
            )
        offset += step
    return np.array(bones, np.int64), np.array(offsets, np.int64)


def _reached(walked: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Offsets of the headers the game uses: it walks bones upwards, so only a header whose bone is above every
    earlier one is ever matched (a repeat or a step back is passed over)."""
    bones, offsets = walked
    if not len(bones):
        return offsets
    earlier = np.maximum.accumulate(np.concatenate([[-1], bones[:-1]]))
    return offsets[bones > earlier]


def _decode(
    cur: Cursor,
    at: np.ndarray,
    headers: np.ndarray,
    bones: np.ndarray,
    start: int,
    length: int,
    rotations: np.ndarray,
    positions: np.ndarray,
    animated: np.ndarray,
) -> float:
    """Write frames ``start..start+length`` of the headers' bones: every stream of every channel walked together,
    raw values read in one gather per kind. Returns how far the decoded scale strays from neutral."""
    bone = headers["bone"].astype(np.int64)
    flags = headers["flags"].astype(np.int64)
    delta = (flags & DELTA) != 0
    rle_rot = (flags & (RAWROT | NOROT)) == 0
    rle_pos, rle_scale = (flags & RAWPOS) == 0, (flags & RAWSCALE) == 0
    b = bones[bone]
    tracks = value_tracks(
        cur,
        np.concatenate([at[rle_rot] + ROT_AT, at[rle_pos] + POS_AT, at[rle_scale] + SCALE_AT]),
        length,
        np.concatenate(
            [
                b["rotscale"][rle_rot],
                np.repeat(headers["posscale"][rle_pos, None], 3, axis=1),
                b["scalescale"][rle_scale],
            ]
        ).astype(np.float64),
    )
    split = np.cumsum([rle_rot.sum(), rle_pos.sum()])
    angles, moves, sizes = tracks[: split[0]], tracks[split[0] : split[1]], tracks[split[1] :]

    rot = np.empty((len(bone), length, 4))
    rot[:] = np.where(delta[:, None], IDENTITY, b["quat"][:, [3, 0, 1, 2]].astype(np.float64))[:, None]
    raw = (flags & RAWROT) != 0
    if raw.any():
        rot[raw] = quaternion64_words(gather(cur, at[raw] + ROT_AT, 8, "Quaternion64").view("<u8")[:, 0])[:, None]
    if rle_rot.any():
        bind = np.where(delta[rle_rot, None], 0.0, b["rot"][rle_rot].astype(np.float64))
        q = euler_to_quaternion(angles + bind[:, None])
        aligned = ((b["flags"][rle_rot].astype(np.int64) & BONE_FIXED_ALIGNMENT) != 0) & ~delta[rle_rot]
        align = b["qalignment"][rle_rot][:, [3, 0, 1, 2]].astype(np.float64)
        q[aligned[:, None] & (np.einsum("nfi,ni->nf", q, align) < 0)] *= -1.0
        rot[rle_rot] = q

    pos = _channel(cur, at, POS_AT, ~rle_pos, rle_pos, moves, np.where(delta[:, None], 0.0, b["pos"]), length)
    scale = _channel(cur, at, SCALE_AT, ~rle_scale, rle_scale, sizes, np.where(delta[:, None], 0.0, b["scale"]), length)

    rotations[start : start + length, bone] = rot.swapaxes(0, 1)
    positions[start : start + length, bone] = pos.swapaxes(0, 1)
    animated[bone] = True
    return _scale_departure(scale, delta)


def _channel(
    cur: Cursor,
    at: np.ndarray,
    field: int,
    raw: np.ndarray,
    rle: np.ndarray,
    tracks: np.ndarray,
    base: np.ndarray,
    length: int,
) -> np.ndarray:
    """(N, length, 3): a raw Vector48 (absolute, delta or not) or the streams plus ``base``."""
    out = np.empty((len(at), length, 3))
    if raw.any():
        out[raw] = half_to_float(gather(cur, at[raw] + field, 6, "Vector48").view("<u2"))[:, None]
    if rle.any():
        out[rle] = tracks + base[rle].astype(np.float64)[:, None]
    return out


def _scale_departure(scale: np.ndarray, delta: np.ndarray) -> float:
    """How far the scales stray from leaving the bone's size alone: 1 for a full pose; for a delta, which adds to
    a pose, 0 or 1 (whichever the header's values are nearer) since the game's delta scale blend is unknown."""
    if not len(scale):
        return 0.0
    from_one = np.abs(scale - 1.0).max(axis=(1, 2))
    departure = np.where(delta, np.minimum(from_one, np.abs(scale).max(axis=(1, 2))), from_one)
    departure = np.where(np.isfinite(departure), departure, np.inf)
    return float(departure.max())
