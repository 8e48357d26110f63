"""Decoded Source animations as Blender actions, without ``bpy``.

Pose channels hold each bone's motion relative to its rest pose, in the bone's own frame:
``basis(t) = Xᵀ·(L₀⁻¹·L(t))·X`` where ``L₀`` is the bind-pose local transform, ``L(t)`` the animated one and ``X``
the rotation from the Source bone frame to the Blender bone frame (see ``scene/bones.py``). Delta animations are
already relative (``L(t)`` is the delta), so their basis is ``Xᵀ·L(t)·X`` and the action is marked additive.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError
from ...formats.source.animation import DecodedAnimation, SkippedAnimation, decode_animation
from ...formats.source.includes import Included
from ...formats.source.model import MdlFile
from ..rotations import (
    canonical_sign,
    conjugate,
    left_matrix,
    make_continuous,
    matrix_to_quaternion,
    quaternion_to_matrix,
    right_matrix,
)
from ..types import ActionData, AnimationEntry, BoneChannels, SceneData

BUILD_CHOICES = ("NONE", "DEFAULT", "OWN", "ALL")


@dataclass(frozen=True)
class _Offer:
    source: int  # 0: the model; 1…: its includes, in load order
    index: int  # the animation's index in that source
    entry: AnimationEntry


# Each section beyond the first costs a fixed setup (locating and walking its data: about 150 µs, what
# decoding ~750 bone-frames costs), so sections are charged to the frames × bones budget as this many: a file whose
# 100,000 one-frame sections all point at one small block cannot ask for minutes of work.
SECTION_COST = 1_000


def section_count(desc) -> int:
    """How many sections the animation's data is read in (the last frame of a long one sits alone in an extra one)."""
    frames, per = max(desc.num_frames, 0), max(desc.section_frames, 0)
    return frames // per + 2 if per and frames > per else 1


def add_source_animations(
    mdl: MdlFile,
    ani: tuple[bytes, str] | None,
    bone_axes: np.ndarray,
    scale: float,
    scene: SceneData,
    includes: list[Included] = (),
    build: str = "ALL",
    only: str | None = None,
    fps: float | None = None,
) -> None:
    """List every animation on offer in ``scene.animations`` — the model's own, then those of the models it includes
    (decoded with the included model's bones, mapped onto ours by case-insensitive name; a name already taken keeps
    the first) — and make actions for those ``build`` asks for: none, the default sequence's, the model's own, or
    all. ``only`` names the one animation to make instead (building on demand), at the scene rate ``fps``."""
    sources = [(mdl, ani, "")] + [(inc.mdl, inc.ani, inc.name) for inc in includes]
    offers = _offers(sources, mdl)
    chosen = _chosen(offers, build, only, _default_index(mdl))
    ours = {name.lower(): i for i, name in enumerate(mdl.bone_names)}
    rest_rot = quaternion_to_matrix(mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]])
    rest_pos = mdl.bones["pos"].astype(np.float64)
    budget = current_budget()
    data_bytes = sum(len(s.data) + (len(a[0]) if a else 0) for s, a, _ in sources)
    frames_left = total_frames = budget.bone_frames(data_bytes)
    events_left = budget.events
    mappings: dict[int, np.ndarray] = {}
    events: dict[int, dict[int, list[tuple[str, float]]]] = {}
    for offer in chosen:
        source, source_ani, label = sources[offer.source]
        desc = source.animations[offer.index]
        if offer.source not in events:
            events[offer.source] = _events_by_animation(source)
            events_left -= sum(len(e) for e in events[offer.source].values())
            budget.check(source.path, "animation events over all sequences", budget.events - events_left, budget.events)
        cost = max(desc.num_frames, 0) * max(len(mdl.bones), len(source.bones)) + SECTION_COST * (
            section_count(desc) - 1
        )
        budget.check(source.path, f"frames × bones of animation '{desc.name}'", cost, budget.animation_bone_frames)
        frames_left -= cost
        budget.check(source.path, "frames × bones over all animations", total_frames - frames_left, total_frames)
        try:
            anim = decode_animation(source, offer.index, *(source_ani or (None, None)))
        except SkippedAnimation as exc:
            scene.warnings.add(f"animation '{desc.name}' was skipped: {exc}")
            continue
        except BudgetExceeded:
            raise
        except FormatError as exc:
            scene.warnings.add(f"animation '{desc.name}' could not be decoded: {exc.reason} (byte {exc.offset})")
            continue
        scene.warnings.extend(anim.notes)
        if not 1e-3 <= anim.fps <= 1e4:  # NaN, infinity or absurd: the timeline cannot show it
            scene.warnings.add(f"animation '{desc.name}' has a frame rate of {anim.fps}; 30 fps is used")
            anim.fps = 30.0
        if offer.source:
            if offer.source not in mappings:
                mappings[offer.source] = np.array([ours.get(n.lower(), -1) for n in source.bone_names], np.int64)
            anim = _remap(anim, mappings[offer.source], mdl)
        fps = fps or anim.fps
        action = _action(anim, rest_rot, rest_pos, bone_axes, scale, fps / anim.fps)
        action.markers = [
            (n, c * (len(anim.rotations) - 1) * fps / anim.fps) for n, c in events[offer.source].get(offer.index, [])
        ]
        action.props = {
            "source_animation": desc.name,
            "source_fps": anim.fps,
            "source_frames": len(anim.rotations),
            "source_delta": anim.delta,
        }
        if label:
            action.props["source_include"] = label
        offer.entry.built = True
        scene.actions.append(action)
    scene.animations = [o.entry for o in offers]
    if not scene.actions:
        return
    scene.fps = fps
    # The scene shows the playing (first) action; a one-frame pose (a static "idle" or "ref") would give a useless
    # 0..1 range, so the range then spans the longest action instead, ready for whichever track is played.
    first = scene.actions[0].frame_range
    if first[1] <= first[0]:
        first = max((a.frame_range for a in scene.actions), key=lambda r: r[1] - r[0])
    scene.frame_range = first
    scene.props["source_sequences"] = [
        {
            "name": s.name,
            "activity": s.activity,
            "animations": [mdl.animations[a].name for a in s.animations if 0 <= a < len(mdl.animations)],
        }
        for s in mdl.sequences
    ]


def _offers(sources: list[tuple[MdlFile, tuple[bytes, str] | None, str]], mdl: MdlFile) -> list[_Offer]:
    """Every animation once (the first of a name wins), with the activity of the first sequence that plays it."""
    taken: set[str] = set()
    offers = []
    for s, (source, _, label) in enumerate(sources):
        activity = {}
        for seq in source.sequences:
            for a in seq.animations[:1]:
                activity.setdefault(a, seq.activity)
        for i, desc in enumerate(source.animations):
            if desc.name in taken:
                continue
            taken.add(desc.name)
            entry = AnimationEntry(
                desc.name, int(desc.num_frames), float(desc.fps), bool(desc.is_delta), activity.get(i, ""), label
            )
            offers.append(_Offer(s, i, entry))
    return offers


def _chosen(offers: list[_Offer], build: str, only: str | None, default: int) -> list[_Offer]:
    if only is not None:
        return [o for o in offers if o.entry.name == only][:1]
    if build == "ALL":
        return offers
    if build == "OWN":
        return [o for o in offers if o.source == 0]
    if build == "DEFAULT" and offers:
        own = [o for o in offers if o.source == 0]
        return [next((o for o in own if o.index == default), own[0] if own else offers[0])]
    return []


def _default_index(mdl: MdlFile) -> int:
    """What the game plays when nothing else is asked: the first animation of the model's first sequence."""
    first = mdl.sequences[0].animations if mdl.sequences else []
    return first[0] if first and 0 <= first[0] < len(mdl.animations) else 0


def _remap(anim: DecodedAnimation, mapping: np.ndarray, mdl: MdlFile) -> DecodedAnimation:
    """Carry an included model's animation over to our bones; bones it does not know keep our bind pose
    (or stay still, in a delta)."""
    frames, count = len(anim.rotations), len(mdl.bones)
    rotations = np.empty((frames, count, 4))
    positions = np.empty((frames, count, 3))
    rotations[:] = (1.0, 0.0, 0.0, 0.0) if anim.delta else mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    positions[:] = 0.0 if anim.delta else mdl.bones["pos"].astype(np.float64)
    animated = np.zeros(count, dtype=bool)
    known = mapping >= 0
    rotations[:, mapping[known]] = anim.rotations[:, known]
    positions[:, mapping[known]] = anim.positions[:, known]
    animated[mapping[known]] = anim.animated[known]
    return DecodedAnimation(anim.name, anim.fps, anim.delta, rotations, positions, animated)


def _events_by_animation(mdl: MdlFile) -> dict[int, list[tuple[str, float]]]:
    out: dict[int, list[tuple[str, float]]] = {}
    for seq in mdl.sequences:
        if seq.animations and seq.events and 0 <= seq.animations[0] < len(mdl.animations):
            out.setdefault(seq.animations[0], []).extend(
                (e.name or f"event {e.event}", min(max(e.cycle, 0.0), 1.0)) for e in seq.events
            )
    return out


def _action(
    anim: DecodedAnimation, rest_rot: np.ndarray, rest_pos: np.ndarray, x: np.ndarray, scale: float, frame_scale: float
) -> ActionData:
    frames = np.arange(len(anim.rotations), dtype=np.float64) * frame_scale
    # A non-delta animation defines the whole pose: bones without data sit at their bind pose. Keying them (one
    # identity key each) keeps a previously played action from leaving them posed; deltas add, so they don't.
    bones = np.nonzero(anim.animated)[0] if anim.delta else np.arange(len(anim.animated))
    quats, locs = _pose_channels(anim, bones, rest_rot, rest_pos, x, scale)
    rot_frames, rotations = _split(frames, quats, _needed_keys(quats, ROTATION_TOLERANCE))
    loc_frames, locations = _split(frames, locs, _needed_keys(locs, LOCATION_TOLERANCE * abs(scale)))
    channels = list(map(BoneChannels, bones.tolist(), rot_frames, rotations, loc_frames, locations))
    return ActionData(anim.name, channels, (0.0, float(frames[-1]) if len(frames) else 0.0), additive=anim.delta)


def _pose_channels(
    anim: DecodedAnimation, bones: np.ndarray, rest_rot: np.ndarray, rest_pos: np.ndarray, x: np.ndarray, scale: float
) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of the pose channels of ``bones`` at once: (B, F, 4) sign-continuous quaternions of
    ``(R0·X)ᵀ·R(t)·X`` and (B, F, 3) locations ``scale·(p(t) − p0)·R0·X`` (a delta has no R0, p0).

    The rotations stay quaternions: ``conj(q(R0·X)) ⊗ q(t) ⊗ q(X)`` is one 4×4 matrix per bone applied to every
    frame (X is a rotation: the bone frame seen from the Source frame). The first key takes the sign a rotation
    matrix would give it, the others follow it."""
    sandwich, left = (a[bones] for a in _bone_conversions(rest_rot, x, anim.delta))
    q = anim.rotations[:, bones].swapaxes(0, 1)  # (B, F, 4)
    quats = (q / np.sqrt(np.einsum("bfi,bfi->bf", q, q))[..., None]) @ sandwich.swapaxes(1, 2)
    quats *= canonical_sign(quats[:, 0])[:, None, None]
    pos = anim.positions[:, bones] if anim.delta else anim.positions[:, bones] - rest_pos[bones]
    return make_continuous(quats), scale * (pos.swapaxes(0, 1) @ left)


def _bone_conversions(rest_rot: np.ndarray, x: np.ndarray, delta: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per bone: the 4×4 quaternion map of :func:`_pose_channels` and the 3×3 ``R0·X`` (``X`` for a delta). The
    same for every animation of a model, so made once (cached on the arrays' contents)."""
    as_bytes = [np.ascontiguousarray(a, dtype=np.float64).tobytes() for a in (rest_rot, x)]
    return _conversions(*as_bytes, len(x), delta)


@functools.lru_cache(maxsize=8)
def _conversions(rest_rot: bytes, x: bytes, count: int, delta: bool) -> tuple[np.ndarray, np.ndarray]:
    axes = np.frombuffer(x).reshape(count, 3, 3)
    left = axes if delta else np.frombuffer(rest_rot).reshape(count, 3, 3) @ axes
    return left_matrix(conjugate(matrix_to_quaternion(left))) @ right_matrix(matrix_to_quaternion(axes)), left


def _split(frames: np.ndarray, values: np.ndarray, keep: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each channel's kept frames and values, as views into one gathered array (a gather per action, not per
    bone)."""
    counts = keep.sum(axis=1)
    spans = list(zip((np.cumsum(counts) - counts).tolist(), np.cumsum(counts).tolist(), strict=True))
    kept_frames = np.broadcast_to(frames, keep.shape)[keep]
    kept = values[keep]
    return [kept_frames[a:b] for a, b in spans], [kept[a:b] for a, b in spans]


ROTATION_TOLERANCE = 1e-5  # per quaternion component (about 2e-5 rad): a third of Quaternion48's finest step
LOCATION_TOLERANCE = 1e-5  # Source units (inches), times the import scale: far below RLE position steps


def _needed_keys(values: np.ndarray, tolerance: float) -> np.ndarray:
    """(C, F, D) samples → (C, F) the keys to write: linear interpolation between them reproduces every sample
    within ``tolerance`` per component. A channel that never moves keeps its first key, a linear run its ends.

    All channels at once: a frame its neighbours' midpoint reproduces is dropped; where dropped runs bend away
    from the line through the keys around them (errors add up along a slow curve), every local peak of the error
    above the tolerance is put back, step by step, until no frame is off. A channel holding values that are not
    numbers keeps every key (the scene's finite guard repairs them one by one).
    """
    count, frames = values.shape[:2]
    keep = np.zeros((count, frames), dtype=bool)
    keep[:, 0] = True
    if frames < 2:
        return keep
    broken = ~np.isfinite(values).all(axis=(1, 2))
    keep[broken] = True
    rows = np.flatnonzero(~broken & (np.abs(values - values[:, :1]).max(axis=(1, 2)) > tolerance))
    moving = values[rows]
    keep[rows, -1] = True
    keep[rows, 1:-1] = np.abs(moving[:, :-2] + moving[:, 2:] - 2 * moving[:, 1:-1]).max(axis=2) > 2 * tolerance
    while len(rows):
        error = _interpolation_error(values[rows], keep[rows])
        over = error > tolerance
        off = over.any(axis=1)
        rows, error, over = rows[off], error[off], over[off]
        inner = error[:, 1:-1]
        over[:, 1:-1] &= (inner >= error[:, :-2]) & (inner >= error[:, 2:])
        keep[rows] |= over
    return keep


def _interpolation_error(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(C, F) largest component error of each frame against linear interpolation between the kept keys around it;
    every row keeps its last frame, so in the flattened rows the next key is always in the same row (frames are
    evenly spaced: key indices stand in for times)."""
    flat = values.reshape(-1, values.shape[2])
    keys = np.flatnonzero(keep)
    segment = np.cumsum(keep.ravel()) - 1
    before = keys[segment]
    after = keys[np.minimum(segment + 1, len(keys) - 1)]
    t = ((np.arange(len(flat)) - before) / np.maximum(after - before, 1))[:, None]
    start = flat[before]
    return np.abs(start + (flat[after] - start) * t - flat).max(axis=1).reshape(keep.shape)
