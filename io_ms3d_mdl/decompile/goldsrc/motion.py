"""A GoldSrc sequence's blends as animation SMD frames, every frame of every bone as the engine poses it.

What ``studiomdl`` (the HL SDK's) does to an animation SMD, and how each step is met here:
- The root bones (no parent) are turned by the sequence's rotation, 90° about Z unless ``rotate`` says otherwise
  (position turned, angle added to Z). The frames are written as the engine poses them (turned), and every
  ``$sequence`` says ``rotate -90`` (a rotation of 0): a recompile turns nothing, and an SMD importer shows what the
  game shows. (An author's SMDs hold the roots before that turn: :func:`unturn_roots` and :func:`turn_roots` go
  between the two.)
- With ``LX``/``LY``/``LZ`` the root's travel from the first to the last frame (along those axes) was taken out of
  every frame, in even steps, and stored as the sequence's linear movement: put back, so a recompile finds and
  takes out the same movement, and the SMD shows the walk the game shows (the entity carries that travel).
- Angles were kept in [-π, π) and stored as offsets from the bone's default, wrapped the same way: written back
  in [-π, π) (the same rotations).
- Values were quantised per bone and channel, a looping sequence's last frame set to its first, ``XR``/``YR``/``ZR``
  roots held at their first frame's angle: that is what the file holds, written as decoded.
The frames come from the readers' decoding (``formats.goldsrc.animation.decode_sequences``), sequence-group files
included, a batch of sequences at a time: numpy's cost per call is what a short sequence costs.
"""

from __future__ import annotations

import numpy as np

from ...errors import FormatError
from ...formats.goldsrc.animation import WalkAllowance, decode_sequences
from ...formats.goldsrc.model import GsFile, GsSequence
from ...formats.goldsrc.structs import MOTION_X, MOTION_Y, MOTION_Z
from ...scene.goldsrc.animation import in_place
from ...scene.rotations import euler_xyz_to_matrix, matrix_to_quaternion
from ..source.angles import quaternion_to_euler
from ..source.animations import same_pose

LINEAR_AXES = ((MOTION_X << 6, 0), (MOTION_Y << 6, 1), (MOTION_Z << 6, 2))  # LX 64, LY 128, LZ 256
DEFAULT_ROTATION = np.pi / 2  # studiomdl turns an animation's roots by this about Z unless told otherwise
WRAP_ANGLES = 1 << 16  # angles wrapped at a time
QC_ROTATE = -90  # ``rotate`` a $sequence names so that the compiler turns nothing (its rotation is this + 90°)


Replaced = dict[int, tuple[np.ndarray, np.ndarray]]  # blend -> Blender's positions and rotations (an export's)


def batch_frames(
    gs: GsFile, indices: list[int], allowance: WalkAllowance, replaced: dict[int, Replaced]
) -> list[tuple[list[np.ndarray], list[int]] | FormatError]:
    """Per sequence of ``indices``, decoded together (their blends views of one array), or the error that kept it
    from being decoded: per blend, (frames, bones, 6) float64, each bone's local position and Euler angles (radians,
    ``Rz·Ry·Rx``), as the animation SMD holds them; and the bones some of whose channels point past the end of the
    file (the reader holds those at the bone's default, as they are written). ``allowance``: the data walked so far,
    shared by a model's sequences. ``replaced``: per sequence, the blends an export takes from Blender (blend ->
    positions, rotations as ``source.new_actions.edited_poses`` gives them, in place as the import shows them): see
    :func:`_from_blender`."""
    decoded, values = decode_sequences(gs, [gs.sequences[s] for s in indices], allowance)
    roots = np.flatnonzero(gs.bones["parent"] < 0)
    out: list[tuple[list[np.ndarray], list[int]] | FormatError] = []
    for s, result in zip(indices, decoded, strict=True):
        if isinstance(result, FormatError):
            out.append(result)
            continue
        seq, edited = gs.sequences[s], replaced.get(s) or {}
        blends = []
        for blend, frames in enumerate(result.values):
            if blend in edited:  # (from the frames as decoded: the angles are wrapped below)
                blends.append(_as_compiled(gs, seq, _from_blender(seq, edited[blend], frames)))
            else:
                _travel(seq, frames, roots)
                blends.append(frames)
        out.append((blends, np.flatnonzero(result.held.any(axis=(0, 2))).tolist()))
    rows = max(1, WRAP_ANGLES // max(1, values.shape[1] * 3))  # (rows of (bones, 6): three angles a bone)
    for start in range(0, len(values), rows):  # (a block at a time: its temporary stays small)
        _wrap(values[start : start + rows])
    return out


def _from_blender(seq: GsSequence, edited: tuple[np.ndarray, np.ndarray], frames: np.ndarray) -> np.ndarray:
    """A blend the user changed in Blender: Blender's frames, each bone's value on each frame the file's decoded
    one where Blender still shows the file's (as the import shows it: the motion bone in place)."""
    blender = np.concatenate([edited[0], quaternion_to_euler(edited[1])], axis=-1)
    n = frames.shape[1]  # the file's bones (Blender's may add bones after them)
    shown = frames[..., :3].copy()
    in_place(seq, shown)
    same = same_pose(
        (edited[0][:, :n], edited[1][:, :n]), shown, matrix_to_quaternion(euler_xyz_to_matrix(frames[..., 3:]))
    )
    if same is None:  # another frame count: Blender's whole
        return blender
    blender[:, :n, :3] = np.where(same[0][..., None], frames[..., :3], blender[:, :n, :3])
    blender[:, :n, 3:] = np.where(same[1][..., None], frames[..., 3:], blender[:, :n, 3:])
    return blender


def _as_compiled(gs: GsFile, seq: GsSequence, frames: np.ndarray) -> np.ndarray:
    """The root's linear travel put back (``LX``/``LY``/``LZ``), angles in [-π, π), as the module says."""
    _travel(seq, frames, np.flatnonzero(gs.bones["parent"] < 0))
    _wrap(frames)
    return frames


def _travel(seq: GsSequence, frames: np.ndarray, roots: np.ndarray) -> None:
    """The roots' linear travel (``LX``/``LY``/``LZ``) added to (frames, bones, 6) ``frames``, in place."""
    count = frames.shape[0]
    if count > 1 and any(seq.motiontype & flag for flag, _ in LINEAR_AXES):
        travel = np.zeros(3)
        for flag, axis in LINEAR_AXES:
            if seq.motiontype & flag:
                travel[axis] = seq.linearmovement[axis]
        if travel.any():
            steps = np.arange(count, dtype=np.float64)[:, None] / (count - 1) * travel  # (frames, 3)
            frames[:, roots, :3] += steps[:, None, :]


def _wrap(frames: np.ndarray) -> None:
    """The angles of (…, 6) ``frames`` in [-π, π), as studiomdl keeps them (``remainder(a + π, 2π) - π``), in
    place. An angle whose ``a + π`` already lies in [0, 2π) is its own remainder (``fmod`` is exact there): only
    the others pay for one (most angles a file stores are in range)."""
    shifted = frames[..., 3:] + np.pi  # (into a contiguous array: numpy's in-place steps on a strided view cost twice)
    low, high = shifted.min(initial=0.0), shifted.max(initial=0.0)
    if not 0 <= low <= high < 2 * np.pi:  # (a nan fails this too, and stays nan)
        out = (shifted < 0) | (shifted >= 2 * np.pi)
        shifted[out] = np.remainder(shifted[out], 2 * np.pi)
    np.subtract(shifted, np.pi, out=frames[..., 3:])


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
