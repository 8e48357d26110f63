"""GoldSrc sequences as actions: each blend of each sequence is one animation on offer (a multi-blend sequence
offers one per blend), built at import as asked (none, the first sequence, or all) or later on demand.

The decoded local transforms become pose channels with the Source converter's machinery (the same rest-relative
basis, key reduction and end-to-end batching). Where a sequence's motion type says so, the motion bone's
position is zeroed on those axes, as the engine does when it plays a sequence in place.
"""

from __future__ import annotations

import os

import numpy as np

from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError
from ...formats.goldsrc.animation import DecodedSequence, WalkAllowance, decode_sequence, sequence_data
from ...formats.goldsrc.model import GsFile, GsSequence
from ...formats.goldsrc.structs import MOTION_X, MOTION_Y, MOTION_Z
from ...formats.source.animation import DecodedAnimation
from ..names import unique_names
from ..rotations import euler_xyz_to_matrix
from ..source.animation import build_channels, show_first_action
from ..types import AnimationEntry, SceneData

MOTION_AXES = ((MOTION_X, 0), (MOTION_Y, 1), (MOTION_Z, 2))


def offers(gs: GsFile) -> list[tuple[int, int, str]]:
    """(sequence, blend, name) of every animation the model offers, names unique; counted against the budget
    before any is named."""
    counts = [_blends(gs, seq) for seq in gs.sequences]
    budget = current_budget()
    budget.check(gs.path, "animations on offer (sequences × blends)", sum(counts), budget.animation_entries)
    raw = []
    for s, (seq, blends) in enumerate(zip(gs.sequences, counts, strict=True)):
        for b in range(blends):
            raw.append((s, b, seq.label if b == 0 else f"{seq.label}_blend{b}"))
    names = unique_names([r[2] for r in raw], "sequence")
    return [(s, b, n) for (s, b, _), n in zip(raw, names, strict=True)]


def _blends(gs: GsFile, seq: GsSequence) -> int:
    """The blends a sequence offers: as many as its animation table can hold in its file (each needs 12 bytes a
    bone). A count beyond that (or in a file that was not read) is offered once, and says why when it is built."""
    try:
        data, _ = sequence_data(gs, seq)
    except FormatError:
        return 1
    room = (len(data) - max(seq.animindex, 0)) // max(len(gs.bones) * 12, 1)
    return seq.numblends if 1 <= seq.numblends <= room else 1


def add_goldsrc_animations(
    gs: GsFile,
    axes: np.ndarray,
    scale: float,
    scene: SceneData,
    build: str = "DEFAULT",
    only: str | None = None,
    fps: float | None = None,
) -> None:
    """List every animation in ``scene.animations`` and build those asked for: ``build`` NONE, DEFAULT (the first
    sequence, each of its blends), OWN or ALL (every one); ``only`` names the one to build instead, at ``fps``."""
    available = offers(gs)
    entries = [
        AnimationEntry(
            name,
            max(gs.sequences[s].numframes, 0),
            gs.sequences[s].fps,
            False,
            activity=str(gs.sequences[s].activity) if gs.sequences[s].activity else "",
        )
        for s, _, name in available
    ]
    if only is not None:
        chosen = [i for i, (_, _, n) in enumerate(available) if n == only]
    elif build == "NONE":
        chosen = []
    elif build == "DEFAULT":
        chosen = [i for i, (s, _, _) in enumerate(available) if s == 0]
    else:
        chosen = list(range(len(available)))
    budget = current_budget()
    data_bytes = len(gs.data) + sum(len(d) for d, _ in gs.group_data.values())
    total = budget.bone_frames(data_bytes)
    spent = 0
    for i in chosen:  # every budget is checked before any work
        seq = gs.sequences[available[i][0]]
        spent += max(seq.numframes, 0) * len(gs.bones)
        budget.check(gs.path, "frames × bones over all animations", spent, total)
    local = gs.bones["value"].astype(np.float64)
    rest_rot = euler_xyz_to_matrix(local[:, 3:])
    rest_pos = local[:, :3]
    decoded: dict[int, DecodedSequence | None] = {}
    allowance = WalkAllowance()
    picked, positions, angles = [], [], []
    for i in chosen:
        s, blend, _ = available[i]
        seq = gs.sequences[s]
        if s not in decoded:
            try:
                decoded[s] = decode_sequence(gs, seq, allowance)
            except BudgetExceeded:
                raise
            except FormatError as exc:
                where = f" (byte {exc.offset})" if exc.offset is not None else ""
                decoded[s] = None
                scene.warnings.add(f"sequence '{seq.label}' could not be decoded: {exc.reason}{where}")
            else:
                _report_held(gs, seq, decoded[s], scene)
        data = decoded[s]
        if data is None:
            continue
        moved = data.positions[blend].copy()
        in_place(seq, moved)
        positions.append(moved)
        angles.append(data.angles[blend])
        picked.append((i, seq))
    anims = []
    if picked:  # every frame of every animation turned into quaternions in one pass
        quats = euler_to_quaternion(np.concatenate(angles))
        starts = np.cumsum([0] + [len(a) for a in angles])
        animated = np.ones(len(gs.bones), dtype=bool)
        for k, (i, seq) in enumerate(picked):
            anim_fps = seq.fps if 1e-3 <= seq.fps <= 1e4 else 30.0
            if anim_fps != seq.fps:
                scene.warnings.add(f"sequence '{seq.label}' has a frame rate of {seq.fps}; 30 fps is used")
            rotations = quats[starts[k] : starts[k + 1]]
            anims.append(DecodedAnimation(available[i][2], anim_fps, False, rotations, positions[k], animated))
    if anims:
        fps = fps or anims[0].fps
        actions = build_channels(anims, [fps / a.fps for a in anims], rest_rot, rest_pos, axes, scale)
        for (i, seq), anim, action in zip(picked, anims, actions, strict=True):
            ratio = fps / anim.fps
            action.markers = [(_event_name(e.event, e.options), e.frame * ratio) for e in seq.events]
            action.frame_step = ratio
            action.props = {
                "source_animation": anim.name,
                "source_sequence": seq.label,
                "source_fps": anim.fps,
                "source_frames": len(anim.rotations),
                "source_looping": seq.looping,
                "source_activity": seq.activity,
                "source_motion_type": seq.motiontype,
                "source_linear_movement": list(seq.linearmovement),
                "source_blend": available[i][1],
            }
            entries[i].built = True
            scene.actions.append(action)
    scene.animations = entries
    if not scene.actions:
        return
    show_first_action(scene, fps)


HELD_NAMES = 8  # bones named in a warning about channels held at rest (then "and N more")


def _report_held(gs: GsFile, seq: GsSequence, data: DecodedSequence, scene: SceneData) -> None:
    """Once per sequence: the bones some of whose channels point past the end of the file (held at rest)."""
    bones = np.flatnonzero(data.held.any(axis=(0, 2))).tolist()
    if not bones:
        return
    names = [gs.bone_names[b] or f"bone {b}" for b in bones[:HELD_NAMES]]
    more = f" and {len(bones) - HELD_NAMES} more" if len(bones) > HELD_NAMES else ""
    where = os.path.basename(sequence_data(gs, seq)[1] or "the model")
    scene.warnings.add(
        f"sequence '{seq.label}': the animation data of {'bone' if len(bones) == 1 else 'bones'} "
        f"{', '.join(repr(n) for n in names)}{more} points past the end of '{where}'; those channels hold the "
        "bone's rest value"
    )


def euler_to_quaternion(angles: np.ndarray) -> np.ndarray:
    """(…, 3) Euler angles (radians; X applied first, then Y, then Z, as the engine's AngleQuaternion) → (…, 4)
    quaternions (w, x, y, z), straight from the half angles."""
    half = np.asarray(angles, dtype=np.float64) * 0.5
    s, c = np.sin(half), np.cos(half)
    sr, sp, sy = s[..., 0], s[..., 1], s[..., 2]
    cr, cp, cy = c[..., 0], c[..., 1], c[..., 2]
    out = np.empty((*half.shape[:-1], 4))
    out[..., 0] = cr * cp * cy + sr * sp * sy
    out[..., 1] = sr * cp * cy - cr * sp * sy
    out[..., 2] = cr * sp * cy + sr * cp * sy
    out[..., 3] = cr * cp * sy - sr * sp * cy
    return out


def in_place(seq: GsSequence, positions: np.ndarray) -> None:
    """Zero the motion bone's position on the axes the motion type names (the engine plays such motion in place,
    moving the entity by the sequence's linear movement instead)."""
    bone = seq.motionbone
    if not 0 <= bone < positions.shape[1]:
        return
    for flag, axis in MOTION_AXES:
        if seq.motiontype & flag:
            positions[:, bone, axis] = 0.0


def _event_name(event: int, options: str) -> str:
    return f"{event} {options}".strip()
