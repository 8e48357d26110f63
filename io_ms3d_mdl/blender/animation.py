"""Actions, NLA strips and timeline markers, written in bulk and portable from 4.2 to 5.x.

Blender 4.4 introduced slotted (layered) actions and 5.0 removed ``Action.fcurves``; 4.4/4.5 carry both APIs
and silently ignore curves made through the legacy one on an action that is already assigned (notes
blender.md §0). :func:`curve_factory` therefore always goes through slots when they exist.
"""

from __future__ import annotations

from collections.abc import Callable

import bpy
import numpy as np

from ..scene.types import ActionData, ClipData, SkeletonData

LINEAR = 1  # Keyframe.interpolation enum value


def curve_factory(action: bpy.types.Action, owner: bpy.types.ID) -> Callable[[str, int, str], bpy.types.FCurve]:
    """A function making new F-curves on ``action`` for ``owner``, set up once per action (each curve is made once,
    so there is no per-curve lookup). On 4.4+ curves go into the slot's channelbag, created first; the action is
    assigned to ``owner`` through that slot (4.4/4.5 ignore legacy curves made on an assigned action)."""
    anim = owner.animation_data or owner.animation_data_create()
    if not hasattr(action, "layers"):  # 4.2: legacy F-curves
        return lambda path, index, group: action.fcurves.new(path, index=index, action_group=group)
    anim.action = action
    slot = anim.action_slot
    if slot is None:
        slot = action.slots.new(id_type=owner.id_type, name=owner.name)
        anim.action_slot = slot
    layer = action.layers[0] if action.layers else action.layers.new("Layer")
    strip = layer.strips[0] if layer.strips else layer.strips.new(type="KEYFRAME")
    bag = strip.channelbag(slot, ensure=True)
    if bpy.app.version >= (5, 0, 0):
        return lambda path, index, group: bag.fcurves.new(path, index=index, group_name=group)
    groups: dict[str, bpy.types.ActionGroup] = {}

    def new(path: str, index: int, group: str) -> bpy.types.FCurve:
        fcurve = bag.fcurves.new(path, index=index)
        if group not in groups:
            groups[group] = bag.groups.new(group)
        fcurve.group = groups[group]
        return fcurve

    return new


def write_keys(fcurve: bpy.types.FCurve, frames: np.ndarray, values: np.ndarray) -> None:
    """All keys of one curve in three bulk calls."""
    count = len(frames)
    points = fcurve.keyframe_points
    points.add(count)
    co = np.empty(count * 2, dtype=np.float32)
    co[0::2] = frames
    co[1::2] = values
    points.foreach_set("co", co)
    points.foreach_set("interpolation", np.full(count, LINEAR, dtype=np.int32))
    fcurve.update()


def build_action(armature: bpy.types.Object, data: ActionData, skeleton: SkeletonData) -> bpy.types.Action:
    action = bpy.data.actions.new(data.name)
    new_curve = curve_factory(action, armature)
    for channels in data.channels:
        name = skeleton.bones[channels.bone].name
        base = f'pose.bones["{bpy.utils.escape_identifier(name)}"]'
        for i in range(4 if len(channels.rotation_frames) else 0):
            write_keys(
                new_curve(f"{base}.rotation_quaternion", i, name), channels.rotation_frames, channels.rotations[:, i]
            )
        for i in range(3 if len(channels.location_frames) else 0):
            write_keys(new_curve(f"{base}.location", i, name), channels.location_frames, channels.locations[:, i])
    armature.animation_data_create().action = action
    return action


def stash_actions(armature: bpy.types.Object, actions: list[bpy.types.Action], data: list[ActionData]) -> None:
    """Keep every action: fake users, event markers, custom properties; several actions go on one NLA track each,
    only the first playing, so an artist picks one by unmuting (or soloing) its track."""
    for action, info in zip(actions, data, strict=True):
        action.use_fake_user = True
        for key, value in info.props.items():
            action[key] = value
        for name, frame in info.markers:
            marker = action.pose_markers.new(name)
            marker.frame = round(frame)
    if not actions:
        return
    anim = armature.animation_data_create()
    if len(actions) == 1:
        anim.action = actions[0]
        return
    anim.action = None
    for i, (action, info) in enumerate(zip(actions, data, strict=True)):
        track = anim.nla_tracks.new()
        track.name = action.name
        strip = track.strips.new(action.name, int(np.floor(info.frame_range[0])), action)
        if info.additive:
            strip.blend_type = "COMBINE"
        track.mute = i > 0


def add_clip_strips(armature: bpy.types.Object, action: bpy.types.Action, clips: list[ClipData]) -> None:
    """Each named clip as an NLA strip over its frame range, on muted tracks so the action still plays as a
    whole; overlapping clips go to a further track."""
    anim = armature.animation_data
    tracks: list[tuple[bpy.types.NlaTrack, float]] = []  # (track, last frame used)
    for clip in sorted(clips, key=lambda c: c.start):
        target = next((i for i, (_, end) in enumerate(tracks) if clip.start >= end), None)
        if target is None:
            track = anim.nla_tracks.new()
            track.name = "MilkShape clips" if not tracks else f"MilkShape clips {len(tracks) + 1}"
            track.mute = True
            tracks.append((track, -np.inf))
            target = len(tracks) - 1
        track = tracks[target][0]
        strip = track.strips.new(clip.name, int(np.floor(clip.start)), action)
        strip.action_frame_start = clip.start
        strip.action_frame_end = max(clip.end, clip.start + 1e-3)
        strip.frame_start = clip.start
        strip.frame_end = strip.frame_start + (strip.action_frame_end - strip.action_frame_start)
        tracks[target] = (track, strip.frame_end)
    # NLA strips take no custom properties: the full list, loop flags included, lives on the armature object.
    armature["ms3d_clips"] = [{"name": c.name, "start": c.start, "end": c.end, "loop": c.loop} for c in clips]


def set_scene_timing(scene: bpy.types.Scene, fps: float, frame_range: tuple[float, float]) -> None:
    whole = max(1, round(fps))
    scene.render.fps = whole
    scene.render.fps_base = whole / fps
    scene.frame_start = int(np.floor(frame_range[0]))
    scene.frame_end = max(scene.frame_start, int(np.ceil(frame_range[1])))


def add_clip_markers(scene: bpy.types.Scene, clips: list[ClipData]) -> None:
    for clip in clips:
        scene.timeline_markers.new(clip.name, frame=round(clip.start))
