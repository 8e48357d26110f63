"""Decode Source animations (notes §1.9): per frame and bone, a local rotation and position, exactly as the SDK's
``CalcBoneQuaternion``/``CalcBonePosition`` compute them.

- data lives in the MDL (``animblock == 0``) or in an ``.ani`` block, per section for sectioned animations (with
  the last frame of a long animation in its own extra section);
- each bone with data has a node ``{bone, flags, nextoffset}``; rotations are raw Quaternion48/64 or RLE Euler
  streams (times ``rotscale``, plus the bone's ``rot`` unless delta), positions raw Vector48 or RLE streams;
- bones without a node keep their bind pose, or identity in a delta animation.

``STUDIO_FRAMEANIM`` (v49 frame-major) data is not decoded: such animations are reported as skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import FormatError
from ..binary import Cursor
from . import structs as S
from .animation_values import half_to_float
from .model import MdlAnimation, MdlFile

RAWPOS, RAWROT, ANIMPOS, ANIMROT, DELTA, RAWROT2 = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
STUDIO_DELTA, STUDIO_FRAMEANIM = 0x04, 0x40
BONE_FIXED_ALIGNMENT = 0x100000
MAX_FRAMES = 100_000


@dataclass
class DecodedAnimation:
    name: str
    fps: float
    delta: bool
    rotations: np.ndarray  # (F, B, 4) local quaternions (w, x, y, z)
    positions: np.ndarray  # (F, B, 3) local positions (Source units)
    animated: np.ndarray  # (B,) bool: bones that have data in this animation


class SkippedAnimation(Exception):
    """An animation that is valid but not decodable here (reported per animation, never silently wrong)."""


def quaternion48(raw: bytes) -> np.ndarray:
    x, y, zw = np.frombuffer(raw, "<u2", 3).astype(np.int64)
    q = np.array([(x - 32768) / 32768.0, (y - 32768) / 32768.0, ((zw & 0x7FFF) - 16384) / 16384.0])
    w = np.sqrt(max(0.0, 1.0 - float(q @ q)))
    return np.array([-w if zw >> 15 else w, *q])


def quaternion64(raw: bytes) -> np.ndarray:
    bits = int.from_bytes(raw, "little")
    xyz = [((bits >> shift) & 0x1FFFFF) for shift in (0, 21, 42)]
    q = np.array([(c - 1048576) / 1048576.5 for c in xyz])
    w = np.sqrt(max(0.0, 1.0 - float(q @ q)))
    return np.array([-w if bits >> 63 else w, *q])


def euler_to_quaternion(angles: np.ndarray) -> np.ndarray:
    """Source ``AngleQuaternion`` (= Blender ``Euler((x, y, z), 'XYZ').to_quaternion()``), vectorised, (..., 4) wxyz."""
    half = np.asarray(angles, dtype=np.float64) * 0.5
    sx, sy, sz = np.sin(half[..., 0]), np.sin(half[..., 1]), np.sin(half[..., 2])
    cx, cy, cz = np.cos(half[..., 0]), np.cos(half[..., 1]), np.cos(half[..., 2])
    return np.stack(
        [
            cx * cy * cz + sx * sy * sz,
            sx * cy * cz - cx * sy * sz,
            cx * sy * cz + sx * cy * sz,
            cx * cy * sz - sx * sy * cz,
        ],
        axis=-1,
    )


def rle_track(cur: Cursor, offset: int, frames: int) -> np.ndarray:
    """Every frame's value of one ``mstudioanimvalue_t`` stream (``ExtractAnimValue`` for frames 0..n-1).

    The stream is runs of ``{valid, total}`` headers, each followed by ``valid`` shorts; a run covers ``total``
    frames and repeats its last valid value for the rest. Walked run by run, never frame by frame.
    """
    out = np.zeros(frames, dtype=np.float64)
    frame = 0
    while frame < frames:
        header = cur.array_at(np.dtype("u1"), offset, 2, "animation value run")
        valid, total = int(header[0]), int(header[1])
        if total == 0:  # corrupt: the SDK returns 0 for the rest
            break
        values = cur.array_at(np.dtype("<i2"), offset + 2, valid, "animation values").astype(np.float64)
        span = min(total, frames - frame)
        if valid:
            take = np.minimum(np.arange(span), valid - 1)
            out[frame : frame + span] = values[take]
        frame += total
        offset += 2 * (valid + 1)
    return out


def _data_offset(
    anim: MdlAnimation, section: int, mdl_cur: Cursor, ani: Cursor | None, mdl: MdlFile
) -> tuple[Cursor, int] | None:
    if anim.section_frames > 0:
        (sec,) = mdl_cur.array_at(S.ANIM_SECTION, anim.offset + anim.section_index + section * 8, 1, "section")
        block, index = int(sec["animblock"]), int(sec["animindex"])
    else:
        block, index = anim.anim_block, anim.anim_index
    if block == -1:
        raise SkippedAnimation("its data is marked as needing a recompile (animation block -1)")
    if block == 0:
        return mdl_cur, anim.offset + index
    if ani is None:
        raise SkippedAnimation(
            f"its data is in the .ani file ({mdl.anim_block_name or 'no name'}), which was not found"
        )
    if not 0 < block < len(mdl.anim_blocks):
        raise FormatError(
            mdl.path, anim.offset, f"animation '{anim.name}' uses block {block} of {len(mdl.anim_blocks)}"
        )
    return ani, int(mdl.anim_blocks[block][0]) + index


def decode_animation(
    mdl: MdlFile, index: int, ani_data: bytes | None = None, ani_path: str | None = None
) -> DecodedAnimation:
    anim = mdl.animations[index]
    if anim.flags & STUDIO_FRAMEANIM:
        raise SkippedAnimation("it uses the frame-major STUDIO_FRAMEANIM layout, which is not decoded yet")
    frames = anim.num_frames
    if not 0 < frames <= MAX_FRAMES:
        raise FormatError(mdl.path, anim.offset, f"animation '{anim.name}' declares {frames} frames")
    bones = mdl.bones
    count = len(bones)
    delta = anim.is_delta
    base_quat = bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    rotations = np.empty((frames, count, 4))
    positions = np.empty((frames, count, 3))
    rotations[:] = (1.0, 0.0, 0.0, 0.0) if delta else base_quat
    positions[:] = 0.0 if delta else bones["pos"].astype(np.float64)
    animated = np.zeros(count, dtype=bool)
    mdl_cur = Cursor(mdl.data, mdl.path)
    ani = Cursor(ani_data, ani_path) if ani_data is not None else None

    if anim.section_frames > 0:
        sf = anim.section_frames
        spans = [(s, s * sf, min(sf, frames - s * sf)) for s in range((frames + sf - 1) // sf)]
        if frames > sf:  # the last frame of a long animation lives alone in an extra section (notes §1.9)
            spans = [(s, start, n if start + n < frames else n - 1) for s, start, n in spans]
            spans.append((frames // sf + 1, frames - 1, 1))
    else:
        spans = [(0, 0, frames)]
    for section, start, length in spans:
        if length <= 0:
            continue
        located = _data_offset(anim, section, mdl_cur, ani, mdl)
        cur, offset = located
        _decode_nodes(cur, offset, start, length, bones, delta, rotations, positions, animated, anim.name)
    return DecodedAnimation(anim.name, anim.fps if anim.fps > 0 else 30.0, delta, rotations, positions, animated)


def _value_tracks(cur: Cursor, pointer: int, length: int, scale: np.ndarray, what: str) -> np.ndarray:
    """The three RLE streams a value pointer names (offsets relative to the pointer; ≤ 0 means the axis is 0),
    times the bone's per-axis scale; frames are local to the section."""
    offsets = cur.array_at(np.dtype("<i2"), pointer, 3, f"{what} value offsets")
    values = np.zeros((length, 3))
    for axis in range(3):
        if int(offsets[axis]) > 0:
            values[:, axis] = rle_track(cur, pointer + int(offsets[axis]), length) * float(scale[axis])
    return values


def _decode_nodes(
    cur: Cursor,
    offset: int,
    start: int,
    length: int,
    bones: np.ndarray,
    delta: bool,
    rotations: np.ndarray,
    positions: np.ndarray,
    animated: np.ndarray,
    name: str,
) -> None:
    seen = 0
    frames = slice(start, start + length)
    while True:
        (node,) = cur.array_at(S.ANIM_NODE, offset, 1, f"node of animation '{name}'")
        bone, flags, step = int(node["bone"]), int(node["flags"]), int(node["nextoffset"])
        if bone == 255:
            break
        if bone >= len(bones):
            raise FormatError(cur.path, offset, f"animation '{name}' animates bone {bone} of {len(bones)}")
        animated[bone] = True
        node_delta = bool(flags & DELTA)
        payload = offset + 4
        b = bones[bone]
        if flags & RAWROT:
            q = np.broadcast_to(quaternion48(cur.bytes_at(payload, 6, "Quaternion48")), (length, 4))
            payload += 6
        elif flags & RAWROT2:
            q = np.broadcast_to(quaternion64(cur.bytes_at(payload, 8, "Quaternion64")), (length, 4))
            payload += 8
        elif flags & ANIMROT:
            angles = _value_tracks(cur, payload, length, b["rotscale"], "rotation")
            if not node_delta:
                angles += b["rot"].astype(np.float64)
            q = euler_to_quaternion(angles)
            payload += 6
        else:
            q = np.broadcast_to(
                (1.0, 0.0, 0.0, 0.0) if node_delta else b["quat"].astype(np.float64)[[3, 0, 1, 2]], (length, 4)
            )
        if int(b["flags"]) & BONE_FIXED_ALIGNMENT and not node_delta:
            align = b["qalignment"].astype(np.float64)[[3, 0, 1, 2]]
            q = np.where((q @ align)[:, None] < 0, -q, q)
        rotations[frames, bone] = q
        if flags & RAWPOS:
            positions[frames, bone] = half_to_float(np.frombuffer(cur.bytes_at(payload, 6, "Vector48"), "<u2"))
        elif flags & ANIMPOS:
            pos = _value_tracks(cur, payload, length, b["posscale"], "position")
            positions[frames, bone] = pos if node_delta else pos + b["pos"].astype(np.float64)
        else:
            positions[frames, bone] = 0.0 if node_delta else b["pos"].astype(np.float64)
        seen += 1
        if step == 0 or seen > len(bones):
            break
        offset += step
