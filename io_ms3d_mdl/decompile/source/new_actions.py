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
    # (B, 4, 4) each bone's world-space rest as the import made it (NaN for a bone it did not make): a bone whose
    # rest differs from it was moved by the user (``skeleton_edits``)
    imported: np.ndarray | None = None


def action_frames(
    action: ActionData, rig: BlenderRig, file_world: np.ndarray, file_bones: list[str], frames: np.ndarray | None = None
) -> np.ndarray:
    """(F, file bones, 4, 4): the bone matrices at ``frames`` (Blender's; default: each whole frame of the action's
    range) in the file's model space, the file's bone frames."""
    if frames is None:
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
    source = to_source(world, rig)
    rest_source = to_source(rig.rest, rig)
    index = {name: i for i, name in enumerate(rig.names)}
    out = np.tile(file_world, (n, 1, 1, 1))  # a file bone Blender does not have: its bind pose
    for f, name in enumerate(file_bones):
        i = index.get(name)
        if i is None:
            continue
        fix = np.linalg.inv(rest_source[i]) @ file_world[f]  # Blender's bone frame -> the file's, fixed per bone
        out[:, f] = source[:, i] @ fix
    return out


def to_source(world: np.ndarray, rig: BlenderRig) -> np.ndarray:
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
    roots = np.nonzero(np.asarray(skeleton.parents) < 0)[0]
    written = []
    for k, action in enumerate(actions):
        positions, matrices = local_pose(action_frames(action, rig, file_world, skeleton.names), skeleton)
        rotations = matrix_to_quaternion(matrices)
        frames = np.concatenate([positions, matrix_to_euler(matrices)], axis=2)
        if turn is not None and len(roots):
            unturn_roots(frames, rotations, roots, turn)
        relative = output.name(action.name or f"action{k}", ".smd", folder)
        with output.open(relative) as stream:
            stats = write_smd(stream, skeleton, frames)
        if stats.non_finite:
            warnings.add(f"action '{action.name}': {stats.non_finite} nan/inf values were written as 0")
        written.append(WrittenAnimation(0, -1 - k, action.name, relative, len(frames), rig.fps, False))
    return written


def local_pose(world: np.ndarray, skeleton: SmdSkeleton) -> tuple[np.ndarray, np.ndarray]:
    """(F, B, 4, 4) model-space bone matrices as an SMD's frames hold them: each bone's position (F, B, 3) and
    rotation matrix (F, B, 3, 3) local to its parent."""
    parents = np.asarray(skeleton.parents)
    local = world.copy()
    children = parents >= 0
    local[:, children] = np.linalg.inv(world[:, parents[children]]) @ world[:, children]
    return local[..., :3, 3], local[..., :3, :3]


def edited_poses(
    edited: dict[str, tuple[ActionData, float]],
    mdl_animations: list[str],
    rig: BlenderRig,
    file_world: np.ndarray,
    skeleton: SmdSkeleton,
) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """The model's own animations the user changed in Blender (file name -> the action and the Blender frames one
    file frame spans): per animation index, its frames as Blender poses them (positions, rotations local to the file
    parents; rotations as quaternions w, x, y, z), sampled at the file's frame spacing from the action's start to
    its last key."""
    index = {name: i for i, name in enumerate(mdl_animations)}
    out = {}
    for name, (action, step) in edited.items():
        if name not in index:
            continue
        start = action.frame_range[0]
        keyed = [f[-1] for c in action.channels for f in (c.rotation_frames, c.location_frames) if len(f)]
        end = max(keyed, default=start)  # the last key (Blender's range of a one-key action is a frame longer)
        count = int(np.floor((end - start) / step + 1e-6)) + 1 if step > 0 else 1
        frames = start + step * np.arange(max(count, 1))
        positions, matrices = local_pose(action_frames(action, rig, file_world, skeleton.names, frames), skeleton)
        out[index[name]] = (positions, matrix_to_quaternion(matrices))
    return out
