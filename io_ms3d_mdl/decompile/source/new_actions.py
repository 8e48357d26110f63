"""Actions made in Blender, as the animation SMDs and ``$sequence`` lines of an export (``edits.SourceEdits``).

Each frame's pose is worked out for all frames at once per bone: a pose bone's keys are its transform in its rest
frame, so its place in the armature is ``pose[parent] · rest[parent]⁻¹ · rest[bone] · keys``; that is taken back to
Source units and axes, then to each bone's Source frame (the file's bind pose: Blender's bone axes may differ, by
the import's bone orientation, and that difference is fixed per bone), then made local to the file's parent, and
the turn studiomdl gives root bones is undone as for the file's own animations. Between keys the values are
interpolated linearly (Blender's Bézier handles are not followed): key every frame for an exact result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import Warnings
from ...formats.smd import SmdSkeleton, write_smd
from ...scene.rotations import compose, matrix_to_quaternion, quaternion_to_matrix
from ...scene.types import ActionData
from ..output import Output
from .angles import matrix_to_euler
from .animations import WrittenAnimation, unturn_roots


@dataclass
class BlenderRig:
    """The armature as Blender holds it, in world space, and how to take world space back to Source's."""

    names: list[str]  # each Blender bone by its file name (reader order: parents first)
    parents: np.ndarray  # (B,) into names, -1 for a root
    rest: np.ndarray  # (B, 4, 4) world-space rest matrices
    turn: np.ndarray  # (3, 3) the import's axes: world = turn · source · scale
    scale: float
    fps: float


def action_frames(action: ActionData, rig: BlenderRig, file_world: np.ndarray, file_bones: list[str]) -> np.ndarray:
    """(F, file bones, 4, 4): each frame's bone matrices in the file's model space, the file's bone frames."""
    start, end = action.frame_range
    frames = np.arange(np.floor(start), np.floor(end) + 1.0)
    n, b = len(frames), len(rig.names)
    local = np.tile(np.eye(4), (n, b, 1, 1))
    for channel in action.channels:
        q = np.tile([1.0, 0.0, 0.0, 0.0], (n, 1))
        if len(channel.rotation_frames):
            q = np.stack([np.interp(frames, channel.rotation_frames, c) for c in channel.rotations.T], axis=1)
        t = np.zeros((n, 3))
        if len(channel.location_frames):
            t = np.stack([np.interp(frames, channel.location_frames, c) for c in channel.locations.T], axis=1)
        local[:, channel.bone] = compose(quaternion_to_matrix(q), t)
    world = np.empty_like(local)
    for i in range(b):  # parents come first (the reader's order)
        p = int(rig.parents[i])
        offset = rig.rest[i] if p < 0 else np.linalg.inv(rig.rest[p]) @ rig.rest[i]
        world[:, i] = (offset if p < 0 else world[:, p] @ offset) @ local[:, i]
    source = _to_source(world, rig)
    rest_source = _to_source(rig.rest, rig)
    index = {name: i for i, name in enumerate(rig.names)}
    out = np.tile(file_world, (n, 1, 1, 1))  # a file bone Blender does not have: its bind pose
    for f, name in enumerate(file_bones):
        i = index.get(name)
        if i is None:
            continue
        fix = np.linalg.inv(rest_source[i]) @ file_world[f]  # Blender's bone frame -> the file's, fixed per bone
        out[:, f] = source[:, i] @ fix
    return out


def _to_source(world: np.ndarray, rig: BlenderRig) -> np.ndarray:
    """World-space bone matrices in Source's axes and units: ``turnᵀ·R`` and ``turnᵀ·t / scale`` (the bone's own
    axes are not turned; whatever constant differs is in each bone's fixed correction)."""
    out = world.copy()
    out[..., :3, :3] = rig.turn.T @ world[..., :3, :3]
    out[..., :3, 3] = world[..., :3, 3] @ rig.turn / rig.scale
    return out


def write_new_actions(
    actions: list[ActionData],
    rig: BlenderRig,
    file_world: np.ndarray,
    skeleton: SmdSkeleton,
    turn: np.ndarray | None,
    output: Output,
    warnings: Warnings,
    folder: str = "anims",
) -> list[WrittenAnimation]:
    """One SMD per action (every frame, every bone local to its file parent); ``turn``: studiomdl's root turn."""
    parents = np.asarray(skeleton.parents)
    roots = np.nonzero(parents < 0)[0]
    written = []
    for k, action in enumerate(actions):
        world = action_frames(action, rig, file_world, skeleton.names)
        local = world.copy()
        children = parents >= 0
        local[:, children] = np.linalg.inv(world[:, parents[children]]) @ world[:, children]
        rotations = matrix_to_quaternion(local[..., :3, :3])
        frames = np.concatenate([local[..., :3, 3], matrix_to_euler(local[..., :3, :3])], axis=2)
        if turn is not None and len(roots):
            unturn_roots(frames, rotations, roots, turn)
        relative = output.name(action.name or f"action{k}", ".smd", folder)
        with output.open(relative) as stream:
            stats = write_smd(stream, skeleton, frames)
        if stats.non_finite:
            warnings.add(f"action '{action.name}': {stats.non_finite} nan/inf values were written as 0")
        written.append(WrittenAnimation(0, -1 - k, action.name, relative, len(frames), rig.fps, False))
    return written
