"""Decoded Source animations as Blender actions, without ``bpy``.

Pose channels hold each bone's motion relative to its rest pose, in the bone's own frame:
``basis(t) = Xᵀ·(L₀⁻¹·L(t))·X`` where ``L₀`` is the bind-pose local transform, ``L(t)`` the animated one and ``X``
the rotation from the Source bone frame to the Blender bone frame (see ``scene/bones.py``). Delta animations are
already relative (``L(t)`` is the delta), so their basis is ``Xᵀ·L(t)·X`` and the action is marked additive.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from ...formats.binary import row_max, run_layout
from ...formats.source.animation import DecodedAnimation, SkippedAnimation, decode_animations, fill_rest_pose
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
from ..types import ActionData, AnimationEntry, BoneChannels, PackedKeys, SceneData

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
    events: dict[int, dict[int, list[tuple[str, float]]]] = {}
    costs = []
    for offer in chosen:  # every budget is checked before any work
        source = sources[offer.source][0]
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
        costs.append(cost)
    mappings = {
        s: np.array([ours.get(n.lower(), -1) for n in source.bone_names], np.int64)
        for s, (source, _, _) in enumerate(sources)
        if s
    }
    rest = (rest_rot, rest_pos, bone_axes, scale)
    for batch in _batches(chosen, costs):
        ready = []
        for offer, anim in zip(batch, _decoded(batch, sources), strict=True):
            desc = sources[offer.source][0].animations[offer.index]
            if isinstance(anim, SkippedAnimation):
                scene.warnings.add(f"animation '{desc.name}' was skipped: {anim}")
                continue
            if isinstance(anim, FormatError):
                scene.warnings.add(f"animation '{desc.name}' could not be decoded: {anim.reason} (byte {anim.offset})")
                continue
            scene.warnings.extend(anim.notes)
            if not 1e-3 <= anim.fps <= 1e4:  # NaN, infinity or absurd: the timeline cannot show it
                scene.warnings.add(f"animation '{desc.name}' has a frame rate of {anim.fps}; 30 fps is used")
                anim.fps = 30.0
            fps = fps or anim.fps
            ready.append((offer, anim))
        anims = []
        for source, group in itertools.groupby(ready, key=lambda r: r[0].source):
            own = [anim for _, anim in group]
            anims += _remap(own, mappings[source], mdl) if source else own
        actions = build_channels(anims, [fps / a.fps for a in anims], *rest) if anims else []
        for (offer, _), anim, action in zip(ready, anims, actions, strict=True):
            desc = sources[offer.source][0].animations[offer.index]
            action.markers = [
                (n, c * (len(anim.rotations) - 1) * fps / anim.fps)
                for n, c in events[offer.source].get(offer.index, [])
            ]
            action.frame_step = fps / anim.fps
            action.props = {
                "source_animation": desc.name,
                "source_fps": anim.fps,
                "source_frames": len(anim.rotations),
                "source_delta": anim.delta,
            }
            if sources[offer.source][2]:
                action.props["source_include"] = sources[offer.source][2]
            offer.entry.built = True
            scene.actions.append(action)
    scene.animations = [o.entry for o in offers]
    if not scene.actions:
        return
    show_first_action(scene, fps)
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


# Frames × bones decoded and converted in one pass: large enough that numpy's cost per call is spread over many
# animations, small enough that the pass's temporaries (some 30 floats per bone-frame) stay under about 60 MB.
BATCH_BONE_FRAMES = 1 << 18


def _batches(chosen: list[_Offer], costs: list[int]) -> list[list[_Offer]]:
    """Consecutive runs of the chosen animations, each within BATCH_BONE_FRAMES (or one animation alone)."""
    batches: list[list[_Offer]] = []
    total = 0
    for offer, cost in zip(chosen, costs, strict=True):
        if not batches or total + cost > BATCH_BONE_FRAMES:
            batches.append([])
            total = 0
        batches[-1].append(offer)
        total += cost
    return batches


def _decoded(batch: list[_Offer], sources: list[tuple[MdlFile, tuple[bytes, str] | None, str]]) -> list:
    """Each offer's decoded animation, or why it was not: the animations of one source decoded together."""
    out = []
    for source, group in itertools.groupby(batch, key=lambda o: o.source):
        mdl, ani, _ = sources[source]
        out += decode_animations(mdl, [o.index for o in group], *(ani or (None, None)))
    return out


def _default_index(mdl: MdlFile) -> int:
    """What the game plays when nothing else is asked: the first animation of the model's first sequence."""
    first = mdl.sequences[0].animations if mdl.sequences else []
    return first[0] if first and 0 <= first[0] < len(mdl.animations) else 0


def _remap(anims: list[DecodedAnimation], mapping: np.ndarray, mdl: MdlFile) -> list[DecodedAnimation]:
    """Carry an included model's animations over to our bones, all at once; bones they do not know keep our bind
    pose (or stay still, in a delta). An included model with our very skeleton (its bones by name in our order,
    as an animation library's usually are) needs nothing."""
    if len(mapping) == len(mdl.bones) and (mapping == np.arange(len(mapping))).all():
        return anims
    lengths = [len(a.rotations) for a in anims]
    ends = np.cumsum(lengths).tolist()
    rotations = np.empty((ends[-1], len(mdl.bones), 4))
    positions = np.empty((ends[-1], len(mdl.bones), 3))
    for a, n, end in zip(anims, lengths, ends, strict=True):
        fill_rest_pose(mdl.bones, a.delta, rotations[end - n : end], positions[end - n : end])
    animated = np.zeros((len(anims), len(mdl.bones)), dtype=bool)
    known = mapping >= 0
    rotations[:, mapping[known]] = np.concatenate([a.rotations for a in anims])[:, known]
    positions[:, mapping[known]] = np.concatenate([a.positions for a in anims])[:, known]
    animated[:, mapping[known]] = np.array([a.animated for a in anims])[:, known]
    return [
        DecodedAnimation(a.name, a.fps, a.delta, rotations[end - n : end], positions[end - n : end], animated[k])
        for k, (a, n, end) in enumerate(zip(anims, lengths, ends, strict=True))
    ]


def _events_by_animation(mdl: MdlFile) -> dict[int, list[tuple[str, float]]]:
    out: dict[int, list[tuple[str, float]]] = {}
    for seq in mdl.sequences:
        if seq.animations and seq.events and 0 <= seq.animations[0] < len(mdl.animations):
            out.setdefault(seq.animations[0], []).extend(
                (e.name or f"event {e.event}", min(max(e.cycle, 0.0), 1.0)) for e in seq.events
            )
    return out


def build_channels(
    anims: list[DecodedAnimation],
    frame_scales: list[float],
    rest_rot: np.ndarray,
    rest_pos: np.ndarray,
    x: np.ndarray,
    scale: float,
) -> list[ActionData]:
    """The actions of several animations (of our bones), converted together: those keying the same bones are laid
    end to end along frames and every step is one numpy pass over all of them (numpy's cost per call, not the data,
    is what one short animation costs); each action's channels are views of the result.

    A non-delta animation defines the whole pose: bones without data sit at their bind pose. Keying them (one
    identity key each) keeps a previously played action from leaving them posed; deltas add, so they key only the
    bones they animate."""
    groups: dict[bytes, list[int]] = {}
    for a, anim in enumerate(anims):
        groups.setdefault(anim.animated.tobytes() if anim.delta else b"", []).append(a)
    actions: list[ActionData | None] = [None] * len(anims)
    for members in groups.values():
        clips = [anims[a] for a in members]
        bones = np.nonzero(clips[0].animated)[0] if clips[0].delta else np.arange(len(clips[0].animated))
        built = _clipbuild_channels(clips, [frame_scales[a] for a in members], bones, rest_rot, rest_pos, x, scale)
        for a, action in zip(members, built, strict=True):
            actions[a] = action
    return actions


def _clipbuild_channels(
    anims: list[DecodedAnimation],
    frame_scales: list[float],
    bones: np.ndarray,
    rest_rot: np.ndarray,
    rest_pos: np.ndarray,
    x: np.ndarray,
    scale: float,
) -> list[ActionData]:
    """The actions of animations that key the same ``bones`` (all deltas, or none), laid end to end."""
    lengths = np.array([len(a.rotations) for a in anims], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    clip = np.repeat(np.arange(len(anims)), lengths)  # each frame's animation
    frames = (np.arange(int(lengths.sum())) - starts[clip]) * np.array(frame_scales, dtype=np.float64)[clip]
    quats, locs = _pose_channels(anims, bones, rest_rot, rest_pos, x, scale)
    quats *= canonical_sign(quats[:, starts])[:, clip, None]
    quats = make_continuous(quats, starts)
    both = np.zeros((2 * len(bones), *quats.shape[1:]))  # rotations and locations (a zero fourth component)
    both[: len(bones)], both[len(bones) :, :, :3] = quats, locs
    keep = _needed_keys(both, np.repeat([ROTATION_TOLERANCE, LOCATION_TOLERANCE * abs(scale)], len(bones)), starts)
    (rot_frames, rotations, loc_frames, locations), packs, spans = _kept(frames, quats, locs, keep, starts)
    actions = []
    names = bones.tolist()
    for a, (anim, packed) in enumerate(zip(anims, packs, strict=True)):
        channels = [
            BoneChannels(b, rot_frames[r0:r1], rotations[r0:r1], loc_frames[l0:l1], locations[l0:l1])
            for b, (r0, r1, l0, l1) in zip(names, spans[a], strict=True)
        ]
        end = float(frames[starts[a] + lengths[a] - 1])
        actions.append(ActionData(anim.name, channels, (0.0, end), additive=anim.delta, packed=packed))
    return actions


def _pose_channels(
    anims: list[DecodedAnimation],
    bones: np.ndarray,
    rest_rot: np.ndarray,
    rest_pos: np.ndarray,
    x: np.ndarray,
    scale: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of the pose channels of ``bones``, the animations (all deltas, or none) end to end: (B, T, 4)
    quaternions of ``(R0·X)ᵀ·R(t)·X`` and (B, T, 3) locations ``scale·(p(t) − p0)·R0·X`` (a delta has no R0, p0).

    The rotations stay quaternions: ``conj(q(R0·X)) ⊗ q(t) ⊗ q(X)`` is one 4×4 matrix per bone applied to every
    frame (X is a rotation: the bone frame seen from the Source frame); the sign of the first key of each
    animation is set by the caller."""
    delta = anims[0].delta
    sandwich, left = (a[bones] for a in _bone_conversions(rest_rot, x, delta))
    q = _gathered([a.rotations for a in anims], bones).swapaxes(0, 1)  # (B, T, 4)
    quats = (q / np.sqrt(np.einsum("bfi,bfi->bf", q, q))[..., None]) @ sandwich.swapaxes(1, 2)
    pos = _gathered([a.positions for a in anims], bones)
    if not delta:
        pos -= rest_pos[bones]
    return quats, scale * (pos.swapaxes(0, 1) @ left)


def _gathered(arrays: list[np.ndarray], bones: np.ndarray) -> np.ndarray:
    """The ``bones`` columns of (F, B, D) arrays, end to end along frames, copied once (a long animation's frames
    are not copied twice)."""
    out = np.empty((sum(len(a) for a in arrays), len(bones), arrays[0].shape[2]))
    if len(bones) == arrays[0].shape[1] and (bones == np.arange(len(bones))).all():
        return np.concatenate(arrays, out=out)  # (every bone, in order: one call)
    start = 0
    for a in arrays:
        np.take(a, bones, axis=1, out=out[start : start + len(a)])
        start += len(a)
    return out


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


def _kept(
    frames: np.ndarray, quats: np.ndarray, locs: np.ndarray, keep: np.ndarray, starts: np.ndarray
) -> tuple[tuple[np.ndarray, ...], list[PackedKeys], list]:
    """The kept keys of every animation gathered once (rotation frames, rotations, location frames, locations),
    animation after animation, each one's keys bone after bone; each animation's keys packed (views of those
    arrays); and per animation, per bone, where its rotation and location keys begin and end in them.

    The mask hands the keys out channel by channel (each channel's animations in turn): each run is moved to its
    place in the animation-major order in one scatter, so that an action's keys lie together (its channels and its
    ``PackedKeys`` are views of the same arrays, and the builder takes them without joining 4 arrays a bone)."""
    bones = len(quats)
    counts = np.add.reduceat(keep, starts, axis=1, dtype=np.int64)  # (2B, A): keys per channel and animation
    every_frame = np.broadcast_to(frames, (bones, len(frames)))
    arrays, where, totals = [], [], []
    for mask, runs, values in ((keep[:bones], counts[:bones], quats), (keep[bones:], counts[bones:], locs)):
        flat = runs.ravel()  # (bone, animation) order: the mask's
        by_animation = runs.T.ravel()  # (animation, bone) order: the one wanted
        placed = (np.cumsum(by_animation) - by_animation).reshape(runs.shape[::-1]).T  # (B, A): where each run goes
        to = np.arange(int(flat.sum())) + np.repeat(placed.ravel() - (np.cumsum(flat) - flat), flat)
        kept_frames = np.empty(len(to), dtype=frames.dtype)
        kept_frames[to] = every_frame[mask]
        kept = np.empty((len(to), values.shape[2]), dtype=values.dtype)
        kept[to] = values[mask]
        arrays += [kept_frames, kept]
        where.append(placed)
        totals.append(runs.sum(axis=0))
    rot_frames, rotations, loc_frames, locations = arrays
    (rot_at, loc_at), (rot_total, loc_total) = where, totals
    rot_first, loc_first = (np.cumsum(total) - total for total in totals)  # where each animation's keys begin
    packs = [
        PackedKeys(
            rot_frames[r : r + n],
            rotations[r : r + n],
            counts[:bones, a],
            loc_frames[q : q + m],
            locations[q : q + m],
            counts[bones:, a],
        )
        for a, (r, n, q, m) in enumerate(
            zip(rot_first.tolist(), rot_total.tolist(), loc_first.tolist(), loc_total.tolist(), strict=True)
        )
    ]
    spans = np.stack([rot_at, rot_at + counts[:bones], loc_at, loc_at + counts[bones:]], axis=-1)  # (B, A, 4)
    return (rot_frames, rotations, loc_frames, locations), packs, spans.swapaxes(0, 1).tolist()


ROTATION_TOLERANCE = 1e-5  # per quaternion component (about 2e-5 rad): a third of Quaternion48's finest step
LOCATION_TOLERANCE = 1e-5  # Source units (inches), times the import scale: far below RLE position steps


def _needed_keys(values: np.ndarray, tolerance: float | np.ndarray, starts: np.ndarray | None = None) -> np.ndarray:
    """(C, F, D) samples → (C, F) the keys to write: linear interpolation between them reproduces every sample
    within ``tolerance`` per component (one for all channels, or (C,) one each: channels of several kinds reduced in
    one pass cost what one kind does, numpy's cost being per call). The frames may hold several clips end to end
    (each from ``starts``), each reduced on its own. A clip that never moves keeps its first key, a linear run its
    ends.

    All clips of all channels at once: a frame its neighbours' midpoint reproduces is dropped; where dropped runs
    bend away from the line through the keys around them (errors add up along a slow curve), every local peak of
    the error above the tolerance is put back, step by step, until no frame is off. A clip holding values that are
    not numbers keeps every key (the scene's finite guard repairs them one by one).
    """
    count, frames, width = values.shape
    if not count * frames:
        return np.zeros((count, frames), dtype=bool)
    starts = np.zeros(1, dtype=np.int64) if starts is None else np.asarray(starts, dtype=np.int64)
    lengths = np.diff(np.append(starts, frames))
    flat = values.reshape(-1, width)
    keep = np.zeros(count * frames, dtype=bool)
    first = (np.arange(count)[:, None] * frames + starts).ravel()  # each clip's first sample, clip by clip
    span = np.tile(lengths, count)
    tolerance = np.repeat(np.broadcast_to(np.asarray(tolerance, dtype=np.float64), (count,)), len(starts))  # per clip
    keep[first] = True
    finite = np.isfinite(flat)
    broken = np.zeros(len(first), dtype=bool) if finite.all() else ~np.logical_and.reduceat(finite.all(axis=1), first)
    # How far each clip strays from its first sample, from its extremes
    start, across = flat[first], np.ascontiguousarray(flat.T)  # (reduced along its rows: faster than down columns)
    highest, lowest = np.maximum.reduceat(across, first, axis=1).T, np.minimum.reduceat(across, first, axis=1).T
    away = np.maximum(highest - start, start - lowest)
    moving = ~broken & (row_max(away) > tolerance)
    run, step = run_layout(span[broken])
    keep[first[broken][run] + step] = True
    run, step = run_layout(span[moving])
    if not len(step):
        return keep.reshape(count, frames)
    at = first[moving][run] + step  # the samples of the moving clips, end to end (each at least two)
    keys = (step == 0) | np.append(step[1:] == 0, True)  # every clip's first and last
    limit = tolerance[moving][run]  # each sample's
    del run, step
    if len(at) > 2:
        moved = flat[at]
        keys[1:-1] |= row_max(np.abs(moved[:-2] + moved[2:] - 2 * moved[1:-1])) > 2 * limit[1:-1]
        lengths, rows = span[moving], None  # rows: the samples of the clips still off (None: all of them)
        while lengths.size:
            error = _interpolation_error(moved if rows is None else moved[rows], keys if rows is None else keys[rows])
            over = error > (limit if rows is None else limit[rows])
            heads = np.cumsum(lengths) - lengths
            off = np.logical_or.reduceat(over, heads)  # clips still off somewhere: the others are done
            inner = error[1:-1]
            over[1:-1] &= (inner >= error[:-2]) & (inner >= error[2:])
            keys[np.flatnonzero(over) if rows is None else rows[over]] = True
            run, step = run_layout(lengths[off])
            still = heads[off][run] + step
            rows, lengths = (still if rows is None else rows[still]), lengths[off]
    keep[at] = keys
    return keep.reshape(count, frames)


def _interpolation_error(values: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """(N,) largest component error of each of the (N, D) samples against linear interpolation between the kept
    keys around it; every clip keeps its last sample, so the next key is always in the same clip (frames are
    evenly spaced: key indices stand in for times)."""
    keys = np.flatnonzero(keep)
    segment = np.cumsum(keep) - 1
    before = keys[segment]
    after = keys[np.minimum(segment + 1, len(keys) - 1)]
    t = ((np.arange(len(values)) - before) / np.maximum(after - before, 1))[:, None]
    start = values[before]
    return row_max(np.abs(start + (values[after] - start) * t - values))


def show_first_action(scene: SceneData, fps: float) -> None:
    """The scene's rate and range for its playing (first) action; a one-frame pose (a static "idle" or "ref") would
    give a useless 0..1 range, so the range then spans the longest action instead, ready for whichever track is
    played. (Source and GoldSrc alike.)"""
    scene.fps = fps
    first = scene.actions[0].frame_range
    if first[1] <= first[0]:
        first = max((a.frame_range for a in scene.actions), key=lambda r: r[1] - r[0])
    scene.frame_range = first
