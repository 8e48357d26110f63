"""Decode Bloodlines (MDL 2531) animations into the arrays the 44–49 decoder produces.

Each animation descriptor (72 bytes) points, relative to itself, at one 32-byte entry per bone: a float (1.0 in
every file seen) and seven int32 offsets, relative to the entry, of ``mstudioanimvalue_t`` RLE streams for the
position x, y, z and the rotation quaternion x, y, z, w. A position is the bone's rest position plus value ×
``posscale``; a rotation component is value × ``rotscale`` (absolute: measured on 96 animations, the components
make unit quaternions to 5e-5). A channel whose offset is 0 keeps the bone's rest value (with a zero instead, a
third of the rotations are not unit quaternions). Every stream of every bone of every animation asked for is
walked together (``animation_streams``), never frame by frame: 154 short animations of a hands model decode in
29 ms instead of 48 ms one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError
from ..binary import Cursor
from . import structs2531 as B
from .animation_streams import rle_streams
from .decoded_animation import MAX_FRAMES, DecodedAnimation
from .model import MdlFile

ENTRY = np.dtype([("unknown", "<f4"), ("offsets", "<i4", 7)])
assert ENTRY.itemsize == 32


@dataclass
class _Located:
    """One animation's streams, found and checked; its values not yet read."""

    index: int
    frames: int
    base: int
    offsets: np.ndarray  # (B, 7) stream offsets relative to each bone's entry; 0: the rest value


def decode_2531_animations(mdl: MdlFile, indices: list[int]) -> list[DecodedAnimation | FormatError]:
    """Several animations, their value streams walked together (numpy's cost per call, not the data, is what a
    short animation costs); when that meets damaged data, each is decoded alone and ends with its own error."""
    cur = Cursor(mdl.data, mdl.path)
    try:
        (header,) = cur.array_at(B.HEADER, 0, 1, "version 2531 studiohdr_t header")
        bones = cur.array_at(B.BONE, int(header["boneindex"]), len(mdl.bones), "bones")
    except BudgetExceeded:
        raise
    except FormatError as exc:
        return [exc] * len(indices)
    located: list[_Located | FormatError] = []
    for index in indices:
        try:
            located.append(_locate(mdl, cur, index))
        except BudgetExceeded:
            raise
        except FormatError as exc:
            located.append(exc)
    found = [a for a in located if isinstance(a, _Located)]
    try:
        values: list[np.ndarray | FormatError] = list(_values(cur, bones, found))
    except BudgetExceeded:
        raise
    except FormatError:
        values = []
        for a in found:
            try:
                values.extend(_values(cur, bones, [a]))
            except BudgetExceeded:
                raise
            except FormatError as exc:
                values.append(exc)
    decoded = iter(values)
    return [a if isinstance(a, FormatError) else _decoded(mdl, a, next(decoded)) for a in located]


def _locate(mdl: MdlFile, cur: Cursor, index: int) -> _Located:
    anim = mdl.animations[index]
    frames, count = anim.num_frames, len(mdl.bones)
    if not 0 < frames <= MAX_FRAMES:
        raise FormatError(mdl.path, anim.offset, f"animation '{anim.name}' declares {frames} frames")
    budget = current_budget()
    budget.check(mdl.path, f"frames × bones of animation '{anim.name}'", frames * count, budget.animation_bone_frames)
    if not anim.anim_index:
        raise cur.error(
            f"animation '{anim.name}' has no data (offset 0)", anim.offset + B.ANIMDESC.fields["animindex"][1]
        )
    base = anim.offset + anim.anim_index
    entries = cur.array_at(ENTRY, base, count, f"bone data of animation '{anim.name}'")
    return _Located(index, frames, base, entries["offsets"].astype(np.int64))


def _values(cur: Cursor, bones: np.ndarray, found: list[_Located]) -> list[np.ndarray]:
    """Each animation's (frames, B, 7) values: x y z, qx qy qz qw, rest values where a channel has no stream."""
    rest = np.concatenate([bones["pos"], bones["quat"]], axis=1).astype(np.float64)  # (B, 7)
    scale = np.concatenate([bones["posscale"], bones["rotscale"]], axis=1).astype(np.float64)
    streams = [np.nonzero(a.offsets > 0) for a in found]
    starts = [a.base + ENTRY.itemsize * w + a.offsets[w, c] for a, (w, c) in zip(found, streams, strict=True)]
    lengths = [np.full(len(w), a.frames, dtype=np.int64) for a, (w, _) in zip(found, streams, strict=True)]
    none = np.zeros(0, np.int64)
    flat = rle_streams(cur, np.concatenate([none, *starts]), np.concatenate([none, *lengths]))
    out, at = [], 0
    for a, (which, channel) in zip(found, streams, strict=True):
        values = np.empty((a.frames, len(bones), 7))  # frame-major, as the decoded arrays are laid out
        values[:] = rest
        if len(which):
            tracks = flat[at : at + len(which) * a.frames].reshape(len(which), a.frames)
            at += len(which) * a.frames
            tracks *= scale[which, channel][:, None]
            moved = channel < 3  # positions add to the rest position; rotation components are absolute
            tracks[moved] += rest[which[moved], channel[moved]][:, None]
            values[:, which, channel] = tracks.T
        out.append(values)
    return out


def _decoded(mdl: MdlFile, located: _Located, values: np.ndarray | FormatError) -> DecodedAnimation | FormatError:
    if isinstance(values, FormatError):
        return values
    anim = mdl.animations[located.index]
    rotations = values[:, :, [6, 3, 4, 5]]  # w, x, y, z
    norm = np.sqrt(np.einsum("fbi,fbi->fb", rotations, rotations))[:, :, None]
    rotations /= np.where(norm > 1e-9, norm, 1.0)
    rotations[norm[:, :, 0] <= 1e-9] = (1.0, 0.0, 0.0, 0.0)
    positions = np.ascontiguousarray(values[:, :, :3])
    animated = (located.offsets > 0).any(axis=1)
    fps = anim.fps if anim.fps > 0 else 30.0
    return DecodedAnimation(anim.name, fps, False, rotations, positions, animated)
