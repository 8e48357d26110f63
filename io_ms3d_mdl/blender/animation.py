"""Actions, NLA strips and timeline markers, written in bulk and portable from 4.2 to 5.x.

Blender 4.4 introduced slotted (layered) actions and 5.0 removed ``Action.fcurves``; 4.4/4.5 carry both APIs
and silently ignore curves made through the legacy one on an action that is already assigned (notes
blender.md §0). :func:`curve_factory` therefore always goes through slots when they exist.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from itertools import compress

import bpy
import numpy as np

from ..errors import Warnings
from ..scene.names import shorten
from ..scene.types import ActionData, BoneChannels, ClipData, PackedKeys, SkeletonData
from .action_keys import KEYS_PROPERTY, curves_key, fingerprint, keys_digest

LINEAR = 1  # Keyframe.interpolation enum value


def curve_factory(action: bpy.types.Action, owner: bpy.types.ID) -> Callable[[str, int, str], bpy.types.FCurve]:
    """A function making new F-curves on ``action`` for ``owner``, set up once per action (each curve is made once,
    so there is no per-curve lookup). On 4.4+ curves go into the slot's channelbag, created first; the action is
    assigned to ``owner`` through that slot (4.4/4.5 ignore legacy curves made on an assigned action)."""
    anim = owner.animation_data or owner.animation_data_create()
    if not hasattr(action, "layers"):  # 4.2: legacy F-curves
        legacy = action.fcurves.new
        return lambda path, index, group: legacy(path, index=index, action_group=group)
    anim.action = action
    slot = anim.action_slot
    if slot is None:
        slot = action.slots.new(id_type=owner.id_type, name=owner.name)
        anim.action_slot = slot
    layer = action.layers[0] if action.layers else action.layers.new("Layer")
    strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
    bag = strip.channelbag(slot, ensure=True)
    make = bag.fcurves.new  # bound once: every attribute step on a Blender struct builds a Python object
    if "group_name" in bag.fcurves.bl_rna.functions["new"].parameters:  # 5.0 on: the group made with the curve
        return lambda path, index, group: make(path, index=index, group_name=group)
    groups: dict[str, bpy.types.ActionGroup] = {}

    def new(path: str, index: int, group: str) -> bpy.types.FCurve:
        fcurve = make(path, index=index)
        if group not in groups:
            groups[group] = bag.groups.new(group)
        fcurve.group = groups[group]
        return fcurve

    return new


class Limits:
    """Blender's ranges for timing values, and what one import had to pull into them (reported as one warning)."""

    MAX_FRAME = 1_048_574  # MAXFRAME: scene range, markers, strip ends and keys that can be shown
    MAX_FPS = 32_767.0  # RenderSettings.fps is 1..32767 with fps_base 1e-5..1e6 ...
    MIN_FPS = 1e-6  # ... so the slowest rate is 1 frame per 10⁶ seconds

    def __init__(self) -> None:
        self.notes: dict[str, int] = {}  # what was changed -> how many times

    def note(self, text: str, count: int = 1) -> None:
        self.notes[text] = self.notes.get(text, 0) + count

    def frame(self, value: float) -> float | None:
        """``value`` inside ±MAX_FRAME (None for NaN)."""
        if math.isnan(value):
            return None
        return min(max(float(value), -self.MAX_FRAME), float(self.MAX_FRAME))

    def report(self, warnings: Warnings) -> None:
        if self.notes:
            notes = [text if n == 1 else f"{text} ({n:,}×)" for text, n in self.notes.items()]
            warnings.add("timing values outside Blender's limits were clamped: " + "; ".join(notes))


def build_action(
    armature: bpy.types.Object, data: ActionData, skeleton: SkeletonData, limits: Limits | None = None
) -> bpy.types.Action:
    """One action (the animation list builds them one at a time)."""
    return build_actions(armature, [data], skeleton, limits)[0]


def build_actions(
    armature: bpy.types.Object, data: list[ActionData], skeleton: SkeletonData, limits: Limits | None = None
) -> list[bpy.types.Action]:
    """Every action of an import, its keys laid out for all its curves at once, then per curve only the RNA calls
    that set them. Actions keying the same curves (most of a character's sequences) are copies of a template with
    one key per curve: Blender copies an action in C, which spares each curve its creation, the largest per-curve
    cost (about 4 µs in a 300-curve action, growing with the curve count), and a one-key curve needs one call, or
    none when its key is the template's (each template curve holds the lone key its actions share most)."""
    layouts = [_ActionLayout(d) for d in data]
    groups: dict[tuple, list[_ActionLayout]] = {}
    for layout in layouts:
        groups.setdefault(layout.signature, []).append(layout)
    taken = {d.name for d in data}
    templates: dict[tuple, bpy.types.Action | None] = {}
    shared: dict[tuple, _LoneKeys] = {}
    names: dict[tuple, tuple[list[tuple[str, int, str]], bytes]] = {}  # per signature: its curves, made once
    actions = []
    try:
        for info, layout in zip(data, layouts, strict=True):
            if layout.signature not in names:
                curves = layout.names(skeleton)
                names[layout.signature] = curves, curves_key((path, index) for path, index, _ in curves)
            curves, key = names[layout.signature]
            template = None
            if len(groups[layout.signature]) > 1:
                if layout.signature not in templates:
                    shared[layout.signature] = _LoneKeys(groups[layout.signature])
                    templates[layout.signature] = _template(armature, shared[layout.signature], curves, taken)
                template = templates[layout.signature]
            if template is None:
                action = _filled_new(armature, info.name, layout, curves)
            else:
                action = _filled_copy(template, info.name, layout, shared[layout.signature], curves)
            action[KEYS_PROPERTY] = fingerprint(keys_digest(layout.pairs, key), info.frame_step)
            armature.animation_data_create().action = action
            actions.append(action)
            if layout.dropped and limits is not None:
                limits.note(f"keys beyond frame ±{Limits.MAX_FRAME:,} dropped", layout.dropped)
    finally:
        for template in templates.values():
            if template is not None:
                bpy.data.actions.remove(template)
    return actions


class _ActionLayout:
    """One action's keys as a single float32 buffer of (frame, value) pairs, each curve's a contiguous run: curves
    in the order they are made (per channel, the 4 rotation then the 3 location components of those it keys),
    with their runs' ``starts``/``ends`` in the buffer and key ``counts``. Laid out in numpy, not per curve (an
    import may hold 39,000 curves). ``signature`` tells which curves the action has, for sharing a template."""

    def __init__(self, data: ActionData) -> None:
        channels, packed = data.channels, data.packed
        if packed is None or not len(packed.rotation_counts) == len(packed.location_counts) == len(channels):
            packed = _packed(channels)  # (an action read or made without them: its channels joined)
        rotations, rot_first, rot_counts, lost = _pairs(
            packed.rotation_frames, packed.rotations, packed.rotation_counts, 4
        )
        locations, loc_first, loc_counts, lost_too = _pairs(
            packed.location_frames, packed.locations, packed.location_counts, 3
        )
        self.dropped = lost + lost_too
        self.pairs = np.concatenate([rotations, locations])
        rot_keys, loc_keys = len(rotations) // 8, len(locations) // 6
        first = np.concatenate(
            [rot_first[:, None] + rot_keys * np.arange(4), 4 * rot_keys + loc_first[:, None] + loc_keys * np.arange(3)],
            axis=1,
        )
        counts = np.concatenate(
            [np.repeat(rot_counts[:, None], 4, axis=1), np.repeat(loc_counts[:, None], 3, axis=1)], axis=1
        )
        made = counts > 0
        self.first_keys, self.key_counts = first[made], counts[made]  # per curve, in pairs
        self.starts = (2 * self.first_keys).tolist()
        self.counts = self.key_counts.tolist()
        self.ends = (2 * (self.first_keys + self.key_counts)).tolist()
        self.bones = [c.bone for c in channels]
        self.keyed = made[:, [0, 4]].tolist()  # per channel: has rotation curves, has location curves
        self.signature = (tuple(self.bones), made[:, 0].tobytes(), made[:, 4].tobytes())
        # Keyframe.interpolation is a byte in Blender: a uint8 buffer is copied as is (other types item by item).
        self.linear = np.full(max(self.counts, default=1), LINEAR, dtype=np.uint8)

    def names(self, skeleton: SkeletonData) -> list[tuple[str, int, str]]:
        """Each curve's data path, index and group (its bone's name), in the order of the runs."""
        out = []
        for bone, (rotation, location) in zip(self.bones, self.keyed, strict=True):
            name = skeleton.bones[bone].name
            base = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
            if rotation:
                out.extend((f"{base}.rotation_quaternion", i, name) for i in range(4))
            if location:
                out.extend((f"{base}.location", i, name) for i in range(3))
        return out


def _packed(channels: list[BoneChannels]) -> PackedKeys:
    """The channels' keys joined end to end, as a converter packs them (``scene.types.PackedKeys``)."""
    joined = []
    for frames, values, width in (
        ([c.rotation_frames for c in channels], [c.rotations for c in channels], 4),
        ([c.location_frames for c in channels], [c.locations for c in channels], 3),
    ):
        counts = np.array([len(f) for f in frames], dtype=np.int64)
        frames = np.concatenate([np.zeros(0), *frames])
        values = np.concatenate([np.zeros((0, width)), *(v for v in values if len(v))])
        joined += [frames, values, counts]
    return PackedKeys(*joined)


def _pairs(
    frames: np.ndarray, values: np.ndarray, counts: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """One kind of channel (rotations or locations) of every bone, its keys end to end (``frames`` (N,), ``values``
    (N, width), ``counts`` per channel): float32 (frame, value) pairs, component-major so that each curve's keys are
    contiguous ((width·N·2,) for N keys), with each channel's first key and key count. Keys on frames Blender cannot
    show (not finite, beyond ±MAX_FRAME) are left out and counted."""
    counts = np.asarray(counts, dtype=np.int64)
    values = np.reshape(values, (-1, width))
    showable = np.abs(frames) <= Limits.MAX_FRAME  # False for NaN and infinities too
    dropped = len(frames) - int(np.count_nonzero(showable))
    if dropped:
        owner = np.repeat(np.arange(len(counts)), counts)[showable]
        frames, values = frames[showable], values[showable]
        counts = np.bincount(owner, minlength=len(counts))
    pairs = np.empty((width, len(frames), 2), dtype=np.float32)
    pairs[:, :, 0] = frames
    pairs[:, :, 1] = values.T
    return pairs.reshape(-1), np.cumsum(counts) - counts, counts, dropped


# ``update()`` sorts a curve's keys and sets their handles: LINEAR keys evaluate without them, but the Graph Editor
# frames curves by their handles too (and a switch to Bezier starts from them), so they are kept valid. A lone key
# is set through ``co_ui``, which moves its handles with it (new keys start with key and handles at 0, 0), so
# they sit on the key without an ``update()``.


def _filled_new(
    armature: bpy.types.Object, name: str, layout: _ActionLayout, curves: list[tuple[str, int, str]]
) -> bpy.types.Action:
    action = bpy.data.actions.new(name)
    new_curve = curve_factory(action, armature)
    pairs, linear = layout.pairs, layout.linear
    runs = zip(curves, layout.starts, layout.ends, layout.counts, strict=True)
    for (path, index, group), start, end, count in runs:  # inline: 39,000 curves in civilian.mdl's 130 actions
        fcurve = new_curve(path, index, group)
        points = fcurve.keyframe_points
        points.add(count)
        if count == 1:
            points.foreach_set("co_ui", pairs[start:end])
            points.foreach_set("interpolation", linear[:1])
        else:
            points.foreach_set("co", pairs[start:end])
            points.foreach_set("interpolation", linear[:count])
            fcurve.update()
    return action


class _LoneKeys:
    """The key each template curve holds: the lone (frame, value) key its actions share most, so that a copy needs
    no call for a lone key equal to it (in Bloodlines' swat3.mdl, 811 of its 1,764 curves). A curve keeps (0, 0)
    when no action keys it once, or when the shared key saves no calls (setting it costs one, and each lone key it
    cannot move exactly costs a second). Keys are compared as the bits of their float32 pair; all actions of the
    template at once."""

    _NONE = np.uint64(0xFFFF_FFFF_FFFF_FFFF)  # a NaN frame: never a key's (unshowable frames are left out)

    def __init__(self, layouts: list[_ActionLayout]) -> None:
        lone = np.stack(
            [np.where(x.key_counts == 1, x.pairs.view(np.uint64)[x.first_keys], self._NONE) for x in layouts]
        )
        best = _most_common(lone, self._NONE)
        work = self._work(lone, best)
        # From (0, 0) every lone key moves in one exact call: the shared key is kept where it saves calls
        zero = (best == self._NONE) | ((work == _KEPT).sum(axis=0) <= (work == _MOVED_TWICE).sum(axis=0) + 1)
        self.bits = np.where(zero, np.uint64(0), best)
        self.pairs = self.bits.view(np.float32).reshape(-1, 2)
        work = np.where(zero, np.where(lone == 0, _KEPT, _MOVED), work)
        work[lone == self._NONE] = _FILLED
        self._works = {id(layout): row for layout, row in zip(layouts, work, strict=True)}

    def work(self, layout: _ActionLayout) -> np.ndarray:
        """Per curve of ``layout`` in a copy: KEPT (its lone key is the template's), MOVED (``co_ui`` moves the key
        and its handles onto it), MOVED_TWICE (through (0, 0) first: moving handles straight from the template's
        key would round them off the key, e.g. from frame 1e8 to 1e-8) or FILLED (several keys)."""
        return self._works[id(layout)]

    def _work(self, lone: np.ndarray, bits: np.ndarray) -> np.ndarray:
        start, key = (b.view(np.float32).reshape(*b.shape, 2) for b in (bits, lone))
        with np.errstate(all="ignore"):  # float32 as Blender moves handles, against 0 + key from a fresh key
            straight, fresh = start + (key - start), np.float32(0) + key
        exact = (straight.view(np.uint32) == fresh.view(np.uint32)).all(axis=-1)
        kind = np.where(lone == bits, _KEPT, np.where(exact, _MOVED, _MOVED_TWICE))
        return np.where(lone == self._NONE, _FILLED, kind)


_KEPT, _MOVED, _MOVED_TWICE, _FILLED = range(4)
_ORIGIN = np.zeros(2, dtype=np.float32)


def _most_common(keys: np.ndarray, absent: np.uint64) -> np.ndarray:
    """Per column of ``keys`` (actions × curves), its most common value other than ``absent`` (``absent`` if the
    column holds nothing else); ties go to the lowest value. Sorted runs, no loop per curve."""
    ordered = np.sort(keys.T, axis=1)
    curves, actions = ordered.shape
    if not curves:
        return np.zeros(0, dtype=keys.dtype)
    starts = np.ones(ordered.shape, dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    flat = starts.ravel()
    runs = np.cumsum(flat) - 1
    lengths = np.bincount(runs, weights=ordered.ravel() != absent)
    values = ordered.ravel()[flat]
    column = np.repeat(np.arange(curves), actions)[flat]
    order = np.lexsort((-lengths, column))  # per column, longest run first (a stable sort: lowest value on ties)
    first = order[np.r_[True, column[order][1:] != column[order][:-1]]]
    return np.where(lengths[first] > 0, values[first], absent)


def _template(
    armature: bpy.types.Object, lone: _LoneKeys, names: list[tuple[str, int, str]], taken: set[str]
) -> bpy.types.Action | None:
    """An action with the curves ``names``, each holding one LINEAR key, ``lone``'s, with its handles on it; None
    if Blender did not keep the curves in the order they were made (then every action is made anew). Its name is
    one no action of the file or the import has, so that it never pushes an imported action's name aside."""
    name, n = "io_ms3d_mdl key template", 0
    while name in taken or name in bpy.data.actions:
        n += 1
        name = f"io_ms3d_mdl key template {n}"
    template = bpy.data.actions.new(name)
    try:
        moved = (lone.bits != 0).tolist()
        for points, pair, move in zip(_one_key_curves(template, armature, names), lone.pairs, moved, strict=True):
            if move:  # a new key and its handles sit at (0, 0): co_ui moves them together
                points.foreach_set("co_ui", pair)
        in_order = [(c.data_path, c.array_index) for c in _fcurves(template)] == [(p, i) for p, i, _ in names]
    except BaseException:
        bpy.data.actions.remove(template)
        raise
    if not in_order:
        bpy.data.actions.remove(template)
        return None
    return template


_SOURCE = '["io_ms3d_mdl key source"]'  # a scratch curve's path, removed before the template is used


def _one_key_curves(
    action: bpy.types.Action, owner: bpy.types.ID, names: list[tuple[str, int, str]]
) -> list[bpy.types.FCurveKeyframePoints]:
    """New curves ``names`` on ``action``, in order, each holding one LINEAR key with key and handles at (0, 0).
    From 5.0 each is a copy of a scratch curve already holding that key (``new_from_fcurve``, one call in C for
    creating the curve, adding its key and making it LINEAR) put into its bone's group."""
    new_curve = curve_factory(action, owner)
    linear = np.full(1, LINEAR, dtype=np.uint8)
    curves = _fcurves(action)
    if not hasattr(curves, "new_from_fcurve"):
        out = []
        for path, index, group in names:
            points = new_curve(path, index, group).keyframe_points
            points.add(1)
            points.foreach_set("interpolation", linear)
            out.append(points)
        return out
    sources = [curves.new(_SOURCE, index=index) for index in range(1 + max((i for _, i, _ in names), default=0))]
    for source in sources:
        source.keyframe_points.add(1)
        source.keyframe_points.foreach_set("interpolation", linear)
    copy, groups = curves.new_from_fcurve, _channelbag(action).groups
    made: dict[str, bpy.types.ActionGroup] = {}
    out = []
    for path, index, group in names:
        fcurve = copy(sources[index], data_path=path)
        if group not in made:
            made[group] = groups.new(group)
        fcurve.group = made[group]
        out.append(fcurve.keyframe_points)
    for source in sources:
        curves.remove(source)
    return out


def _filled_copy(
    template: bpy.types.Action, name: str, layout: _ActionLayout, lone: _LoneKeys, names: list[tuple[str, int, str]]
) -> bpy.types.Action:
    action = template.copy()
    action.name = name
    pairs, linear = layout.pairs, layout.linear
    work = lone.work(layout)
    todo = work != _KEPT
    runs = zip(
        _curves_to_fill(action, names, todo.tolist()),
        work[todo].tolist(),
        *((2 * column[todo]).tolist() for column in (layout.first_keys, layout.first_keys + layout.key_counts)),
        layout.key_counts[todo].tolist(),
        strict=True,
    )
    for fcurve, kind, start, end, count in runs:
        points = fcurve.keyframe_points
        if kind == _FILLED:
            points.add(count - 1)
            points.foreach_set("co", pairs[start:end])
            points.foreach_set("interpolation", linear[:count])
            fcurve.update()
            continue
        if kind == _MOVED_TWICE:
            points.foreach_set("co_ui", _ORIGIN)
        points.foreach_set("co_ui", pairs[start:end])
    return action


FIND_UP_TO = 2_000  # curves in a channelbag up to which a copy's curves are looked up by name


def _curves_to_fill(
    action: bpy.types.Action, names: list[tuple[str, int, str]], wanted: list[bool]
) -> Iterator[bpy.types.FCurve]:
    """The curves of a copy that ``wanted`` marks (in the order made, ``names``'). From 4.4 each is looked up by
    name: a curve reached by walking its channelbag costs about 100 ns more a key in every ``foreach_set`` on its keys
    (4.5 to 5.2, ``scripts/bench_rna_calls.py``), and ``find`` (a scan in C) costs less than that for up to
    ``FIND_UP_TO`` curves. 4.2's legacy list is walked (there a walked curve costs next to nothing more, and a
    lookup 2 µs); the walk passes over the unwanted curves in C."""
    curves = _fcurves(action)
    if not hasattr(action, "layers") or len(names) > FIND_UP_TO:
        return compress(curves, wanted)
    find = curves.find
    return (find(path, index=index) for (path, index, _), want in zip(names, wanted, strict=True) if want)


def _fcurves(action: bpy.types.Action) -> bpy.types.bpy_prop_collection:
    """The curves of an action made by :func:`curve_factory`: its only channelbag's on 4.4+, else the legacy list."""
    if hasattr(action, "layers"):
        return _channelbag(action).fcurves
    return action.fcurves


def _channelbag(action: bpy.types.Action) -> bpy.types.ActionChannelbag:
    return action.layers[0].strips[0].channelbags[0]


def stash_actions(
    armature: bpy.types.Object, actions: list[bpy.types.Action], data: list[ActionData], limits: Limits | None = None
) -> None:
    """Keep every action: fake users, event markers, custom properties; several actions go on one NLA track each,
    only the first playing, so an artist picks one by unmuting (or soloing) its track."""
    limits = limits or Limits()
    for action, info in zip(actions, data, strict=True):
        action.use_fake_user = True
        for key, value in info.props.items():
            action[key] = value
        _pose_markers(action, info.markers, limits)
    if not actions:
        return
    anim = armature.animation_data_create()
    if len(actions) == 1:
        anim.action = actions[0]
        return
    anim.action = None
    for i, (action, info) in enumerate(zip(actions, data, strict=True)):
        track = anim.nla_tracks.new()
        track.name = shorten(action.name)  # 5.0 allows longer action names; tracks and strips keep 63 bytes
        start = limits.frame(info.frame_range[0]) or 0.0
        strip = track.strips.new(shorten(action.name), int(np.floor(start)), action)
        if info.additive:
            strip.blend_type = "COMBINE"
        track.mute = i > 0


def _pose_markers(action: bpy.types.Action, markers: list[tuple[str, float]], limits: Limits) -> None:
    for name, frame in markers:
        clamped = limits.frame(frame)
        if clamped is None:
            limits.note("event markers without a valid frame dropped")
            continue
        if clamped != frame:
            limits.note(f"event markers moved to frame ±{Limits.MAX_FRAME:,}")
        action.pose_markers.new(shorten(name)).frame = round(clamped)


MAX_CLIPS = 1_000  # clips turned into NLA strips and markers; more only slow Blender down (all stay listed)
CLIP_TRACK = "MilkShape clips"


def add_clip_strips(
    armature: bpy.types.Object,
    action: bpy.types.Action,
    clips: list[ClipData],
    warnings: Warnings | None = None,
    limits: Limits | None = None,
) -> list[ClipData]:
    """Each named clip as an NLA strip over its frame range, on muted tracks so the action still plays as a
    whole; overlapping clips go to a further track. Returns the clips placed (for the timeline markers)."""
    warnings = warnings if warnings is not None else Warnings()
    limits = limits or Limits()
    # NLA strips take no custom properties: the full list, loop flags included, lives on the armature object.
    armature["ms3d_clips"] = [{"name": c.name, "start": c.start, "end": c.end, "loop": c.loop} for c in clips]
    usable = _placeable(clips, warnings, limits)
    if len(usable) > MAX_CLIPS:
        warnings.add(
            f"the model lists {len(clips):,} clips; only the first {MAX_CLIPS:,} usable ones became NLA strips and "
            "markers (all of them are listed in the armature's 'ms3d_clips' property)"
        )
        usable = usable[:MAX_CLIPS]
    placed = _place_strips(armature.animation_data_create(), action, usable)
    if len(placed) < len(usable):
        warnings.add(f"{len(usable) - len(placed)} clips could not be placed on NLA tracks and were skipped")
    return placed


def _placeable(clips: list[ClipData], warnings: Warnings, limits: Limits) -> list[ClipData]:
    """Clips whose start Blender can show, their ends pulled inside its frame range."""
    out, dropped = [], []
    for clip in clips:
        end = limits.frame(clip.end)
        if not (np.isfinite(clip.start) and abs(clip.start) <= Limits.MAX_FRAME) or end is None or end < clip.start:
            dropped.append(clip.name)
            continue
        if end != clip.end:
            limits.note(f"clip ends moved to frame {Limits.MAX_FRAME:,}")
        out.append(ClipData(shorten(clip.name), float(clip.start), end, clip.loop))
    if dropped:
        shown = ", ".join(f"'{shorten(n, 40)}'" for n in dropped[:3]) + (", ..." if len(dropped) > 3 else "")
        warnings.add(
            f"{len(dropped):,} clips start outside Blender's frame range (±{Limits.MAX_FRAME:,}) and were skipped: "
            + shown
        )
    return out


def _place_strips(anim: bpy.types.AnimData, action: bpy.types.Action, clips: list[ClipData]) -> list[ClipData]:
    """Interval partitioning in O(n log n): each clip goes on the first track (lowest index) free at its start."""
    tracks: list[bpy.types.NlaTrack] = []
    busy: list[tuple[float, int]] = []  # (end frame, track index) of tracks in use
    free: list[int] = []  # indices of tracks whose last strip ends before the current clip's start
    placed = []
    for clip in sorted(clips, key=lambda c: c.start):
        while busy and busy[0][0] <= clip.start:
            heapq.heappush(free, heapq.heappop(busy)[1])
        if free:
            index = heapq.heappop(free)
        else:
            index = len(tracks)
            tracks.append(anim.nla_tracks.new())
            tracks[index].name = CLIP_TRACK if index == 0 else f"{CLIP_TRACK} {index + 1}"
            tracks[index].mute = True
        end = _add_strip(tracks[index], action, clip)
        heapq.heappush(busy, (clip.start if end is None else end, index))
        if end is not None:
            placed.append(clip)
    return placed


def _add_strip(track: bpy.types.NlaTrack, action: bpy.types.Action, clip: ClipData) -> float | None:
    """One clip's strip; its end frame, or None when Blender refuses it."""
    try:
        # Created at the whole frame at or after the start, so it cannot overlap the track's previous strip.
        strip = track.strips.new(clip.name, int(np.ceil(clip.start)), action)
    except RuntimeError:
        return None
    end = max(clip.end, clip.start + 1e-3)
    # Each setter clamps against the other end: end, start, end lands both wherever the action's range was.
    strip.action_frame_end = end
    strip.action_frame_start = clip.start
    strip.action_frame_end = end
    strip.frame_start = clip.start
    strip.frame_end = strip.frame_start + (strip.action_frame_end - strip.action_frame_start)
    return strip.frame_end


def set_scene_timing(
    scene: bpy.types.Scene, fps: float, frame_range: tuple[float, float], limits: Limits | None = None
) -> None:
    """Frame rate and range, inside what Blender accepts."""
    limits = limits or Limits()
    _set_fps(scene.render, fps, limits)
    first, last = _scene_range(*frame_range)
    lo, hi = frame_range
    finite = math.isfinite(lo) and math.isfinite(hi)
    if not finite or (first, last) != (math.floor(lo), max(math.floor(lo), math.ceil(hi))):
        limits.note(f"scene frame range {lo:g}..{hi:g} is now {first:,}..{last:,}")
    scene.frame_start = first
    scene.frame_end = last


def _scene_range(lo: float, hi: float) -> tuple[int, int]:
    """Whole frames holding ``lo..hi``, inside the scene's 0..MAX_FRAME (NaN ends fall back to 0 and the start)."""
    first = 0 if math.isnan(lo) else int(np.floor(min(max(lo, 0.0), Limits.MAX_FRAME)))
    last = first if math.isnan(hi) else int(np.ceil(min(max(hi, first), Limits.MAX_FRAME)))
    return first, last


def _set_fps(render: bpy.types.RenderSettings, fps: float, limits: Limits) -> None:
    """``fps / fps_base`` as close to ``fps`` as Blender allows; a rate that is no number or not positive leaves
    the scene's alone."""
    if not fps > 0:  # also NaN
        limits.note(f"frame rate {fps:g} is not usable; the scene keeps {render.fps / render.fps_base:g} fps")
        return
    rate = min(max(float(fps), Limits.MIN_FPS), Limits.MAX_FPS)
    if rate != fps:
        limits.note(f"frame rate {fps:g} fps is now {rate:g} fps")
    whole = min(max(1, round(rate)), int(Limits.MAX_FPS))
    render.fps = whole
    render.fps_base = whole / rate


def add_clip_markers(scene: bpy.types.Scene, clips: list[ClipData]) -> None:
    """Clips as timeline markers (already limited to showable frames by :func:`add_clip_strips`)."""
    for clip in clips:
        scene.timeline_markers.new(shorten(clip.name), frame=round(clip.start))
