"""A GoldSrc sequence's blends as animation SMD frames, every frame of every bone as the engine poses it.

What ``studiomdl`` (the HL SDK's) does to an animation SMD, and how each step is undone here:
- The root bones (no parent) were turned by the sequence's rotation, 90° about Z unless ``rotate`` said otherwise
  (position turned, angle added to Z): turned back by 90°, since the QC written here names no rotation.
- With ``LX``/``LY``/``LZ`` the root's travel from the first to the last frame (along those axes) was taken out of
  every frame, in even steps, and stored as the sequence's linear movement: put back, so a recompile finds and
  takes out the same movement, and the SMD shows the walk the game shows (the entity carries that travel).
- Angles were kept in [-π, π) and stored as offsets from the bone's default, wrapped the same way: written back
  in [-π, π) (the same rotations).
- Values were quantised per bone and channel, a looping sequence's last frame set to its first, ``XR``/``YR``/``ZR``
  roots held at their first frame's angle: that is what the file holds, written as decoded.
The frames come from the readers' decoding (``formats.goldsrc.animation.decode_sequence``), sequence-group files
included.
"""

from __future__ import annotations

import numpy as np

from ...formats.goldsrc.animation import decode_sequence
from ...formats.goldsrc.model import GsFile, GsSequence
from ...formats.goldsrc.structs import MOTION_X, MOTION_Y, MOTION_Z

LINEAR_AXES = ((MOTION_X << 6, 0), (MOTION_Y << 6, 1), (MOTION_Z << 6, 2))  # LX 64, LY 128, LZ 256
DEFAULT_ROTATION = np.pi / 2  # studiomdl turns an animation's roots by this about Z unless told otherwise


def sequence_frames(gs: GsFile, seq: GsSequence) -> np.ndarray:
    """(blends, frames, bones, 6) float64: each bone's local position and Euler angles (radians, ``Rz·Ry·Rx``), as
    the animation SMD holds them."""
    decoded = decode_sequence(gs, seq)
    frames = np.concatenate([decoded.positions, decoded.angles], axis=-1)
    roots = np.flatnonzero(gs.bones["parent"] < 0)
    count = frames.shape[1]
    if count > 1:
        travel = np.zeros(3)
        for flag, axis in LINEAR_AXES:
            if seq.motiontype & flag:
                travel[axis] = seq.linearmovement[axis]
        if travel.any():
            steps = np.arange(count, dtype=np.float64)[:, None] / (count - 1) * travel  # (frames, 3)
            frames[:, :, roots, :3] += steps[None, :, None, :]
    unturn_roots(frames, roots)
    frames[..., 3:] = np.remainder(frames[..., 3:] + np.pi, 2 * np.pi) - np.pi  # as studiomdl keeps them
    return frames


def unturn_roots(frames: np.ndarray, roots: np.ndarray, angle: float = DEFAULT_ROTATION) -> None:
    """Turn the ``roots`` of (…, bones, 6) frames back by ``angle`` about Z, in place: position by ``Rz(-angle)``,
    Z angle less ``angle``."""
    c, s = np.cos(angle), np.sin(angle)
    x = frames[..., roots, 0].copy()
    y = frames[..., roots, 1].copy()
    frames[..., roots, 0] = c * x + s * y
    frames[..., roots, 1] = -s * x + c * y
    frames[..., roots, 5] -= angle


def turn_roots(frames: np.ndarray, roots: np.ndarray, angle: float = DEFAULT_ROTATION) -> None:
    """What ``studiomdl`` does to an animation SMD's roots (the inverse of :func:`unturn_roots`), in place."""
    unturn_roots(frames, roots, -angle)
