"""Decode Bloodlines (MDL 2531) animations into the arrays the 44–49 decoder produces.

Each animation descriptor (72 bytes) points, relative to itself, at one 32-byte entry per bone: a float (1.0 in
every file seen) and seven int32 offsets, relative to the entry, of ``mstudioanimvalue_t`` RLE streams for the
position x, y, z and the rotation quaternion x, y, z, w. A position is the bone's rest position plus value ×
``posscale``; a rotation component is value × ``rotscale`` (absolute: measured on 96 animations, the components
make unit quaternions to 5e-5). A channel whose offset is 0 keeps the bone's rest value (with a zero instead, a
third of the rotations are not unit quaternions). Every stream of every bone is walked together
(``animation_streams``), never frame by frame.
"""

from __future__ import annotations

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from ..binary import Cursor
from . import structs2531 as B
from .animation_streams import rle_tracks
from .decoded_animation import MAX_FRAMES, DecodedAnimation
from .model import MdlFile

ENTRY = np.dtype([("unknown", "<f4"), ("offsets", "<i4", 7)])
assert ENTRY.itemsize == 32


def decode_2531_animation(mdl: MdlFile, index: int) -> DecodedAnimation:
    anim = mdl.animations[index]
    frames, count = anim.num_frames, len(mdl.bones)
    if not 0 < frames <= MAX_FRAMES:
        raise FormatError(mdl.path, anim.offset, f"animation '{anim.name}' declares {frames} frames")
    budget = current_budget()
    budget.check(mdl.path, f"frames × bones of animation '{anim.name}'", frames * count, budget.animation_bone_frames)
    cur = Cursor(mdl.data, mdl.path)
    (header,) = cur.array_at(B.HEADER, 0, 1, "version 2531 studiohdr_t header")
    bones = cur.array_at(B.BONE, int(header["boneindex"]), count, "bones")
    if not anim.anim_index:
        raise cur.error(
            f"animation '{anim.name}' has no data (offset 0)", anim.offset + B.ANIMDESC.fields["animindex"][1]
        )
    base = anim.offset + anim.anim_index
    entries = cur.array_at(ENTRY, base, count, f"bone data of animation '{anim.name}'")
    offsets = entries["offsets"].astype(np.int64)
    rest = np.concatenate([bones["pos"], bones["quat"]], axis=1).astype(np.float64)  # (B, 7): x y z, qx qy qz qw
    scale = np.concatenate([bones["posscale"], bones["rotscale"]], axis=1).astype(np.float64)
    values = np.empty((frames, count, 7))  # frame-major, as the decoded arrays are laid out
    values[:] = rest
    which, channel = np.nonzero(offsets > 0)
    if len(which):
        tracks = rle_tracks(cur, base + ENTRY.itemsize * which + offsets[which, channel], frames)
        tracks *= scale[which, channel][:, None]
        moved = channel < 3  # positions add to the rest position; rotation components are absolute
        tracks[moved] += rest[which[moved], channel[moved]][:, None]
        values[:, which, channel] = tracks.T
    rotations = values[:, :, [6, 3, 4, 5]]  # w, x, y, z
    norm = np.sqrt(np.einsum("fbi,fbi->fb", rotations, rotations))[:, :, None]
    rotations /= np.where(norm > 1e-9, norm, 1.0)
    rotations[norm[:, :, 0] <= 1e-9] = (1.0, 0.0, 0.0, 0.0)
    positions = np.ascontiguousarray(values[:, :, :3])
    animated = (offsets > 0).any(axis=1)
    fps = anim.fps if anim.fps > 0 else 30.0
    return DecodedAnimation(anim.name, fps, False, rotations, positions, animated)
