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
from ...scene.rotations import affine_inverse, compose, matrix_to_quaternion, quaternion_to_matrix
from ...scene.types import ActionData
from ..output import Output
from .angles import matrix_to_euler
from .animations import WrittenAnimation


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
    # (4, 4) the armature object's world matrix (None: ``turn``'s, as the import leaves it): an action is posed in
    # the armature's space, as the file's bind pose is, so an object moved, turned or scaled after the import
    # moves its bones in the file no differently
    armature: np.ndarray | None = None


def action_pose(
    action: ActionData, rig: BlenderRig, file_world: np.ndarray, skeleton: SmdSkeleton, frames: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The action at ``frames`` (Blender's; default: each whole frame of its range) as an SMD's frames hold it:
    each file bone's position (F, B, 3) and rotation matrix (F, B, 3, 3) local to its file parent.

    Where every file bone is a Blender bone whose parent is its file parent's (a model as imported, bones moved or
    renamed), a bone's local pose is ``left · keys · right`` with two matrices fixed per bone: the file parent's
    frame cancels against the Blender parent's, so no pose of the whole armature is made. Otherwise (bones made
    or deleted, a hierarchy changed) each file bone's model-space pose is made first (:func:`_file_world`)."""
    if frames is None:
        start, end = action.frame_range
        frames = np.arange(np.floor(start), np.floor(end) + 1.0)
    direct = _direct(rig, file_world, skeleton)
    if direct is None:
        keys = _key_matrices(action, frames, np.arange(len(rig.names)))
        return local_pose(_file_world(keys, rig, file_world, skeleton.names), skeleton)
    source, left, right = direct
    column = np.full(len(rig.names), -1, dtype=np.int64)
    column[source] = np.arange(len(source))
    keys = _key_matrices(action, frames, column)
    if len(np.unique(source)) < len(source):  # (a name the file repeats: each of its bones takes that bone's keys)
        keys = keys[:, column[source]]
    local = left @ (keys @ right)
    return local[..., :3, 3], local[..., :3, :3]


def _key_matrices(action: ActionData, frames: np.ndarray, column: np.ndarray) -> np.ndarray:
    """(F, columns, 4, 4): each Blender bone's keys at ``frames`` (linear between keys; a bone without keys at rest)
    in its ``column`` (-1: left out). The keys are laid out a channel a row, so each ``interp`` fills a contiguous
    row."""
    n, width = len(frames), int(column.max(initial=-1)) + 1
    q = np.zeros((4, width, n))
    q[0] = 1.0
    t = np.zeros((3, width, n))
    for channel in action.channels:  # (a loop over the bones' channels, each taking all frames)
        at = int(column[channel.bone])
        if at < 0:
            continue
        for c in range(4 if len(channel.rotation_frames) else 0):
            q[c, at] = np.interp(frames, channel.rotation_frames, channel.rotations[:, c])
        for c in range(3 if len(channel.location_frames) else 0):
            t[c, at] = np.interp(frames, channel.location_frames, channel.locations[:, c])
    return compose(quaternion_to_matrix(q.transpose(2, 1, 0)), t.transpose(2, 1, 0))


def _source_axes(rig: BlenderRig) -> np.ndarray:
    """A, with ``to_source(M) = A·M·D⁻¹`` (D = diag(1/scale, 1/scale, 1/scale, 1), A = D·diag(turnᵀ, 1)): so a
    bone's pose in its file frame, ``to_source(world) · to_source(rest)⁻¹ · file_world``, is
    ``A · world · rest⁻¹ · A⁻¹ · file_world``. With the armature object's matrix W, A = D·W⁻¹ (the same as
    imported, W = diag(turn, 1)): the pose's change from rest is the armature's, not the world's (a world-space
    turn about a bone moved with its object would move the bone in the file)."""
    if rig.armature is not None:
        undone = affine_inverse(rig.armature)
    else:
        undone = np.eye(4)
        undone[:3, :3] = np.asarray(rig.turn, dtype=np.float64).T
    return np.diag([1.0 / rig.scale] * 3 + [1.0]) @ undone


def _offsets(rig: BlenderRig) -> tuple[np.ndarray, np.ndarray]:
    """Each Blender bone's parent and its rest in its parent's frame (a root's: its world rest), so that a posed
    bone is ``pose[parent] · offset · keys``."""
    parents = np.asarray(rig.parents, dtype=np.int64)
    rest = np.asarray(rig.rest, dtype=np.float64)
    offsets = rest.copy()
    children = parents >= 0
    offsets[children] = affine_inverse(rest[parents[children]]) @ rest[children]
    return parents, offsets


def _direct(
    rig: BlenderRig, file_world: np.ndarray, skeleton: SmdSkeleton
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Per file bone: its Blender bone, and the matrices ``left``, ``right`` with local = left · keys · right;
    None unless each file bone is a Blender bone whose Blender parent is its file parent's Blender bone.

    ``right`` takes the bone's pose to its file frame: ``C = rest⁻¹ · A⁻¹ · file_world``. A file root's local pose
    is its model-space one, ``A · rest · keys · C``; another's, ``C[parent]⁻¹ · offset · keys · C``."""
    index = {name: i for i, name in enumerate(rig.names)}
    if any(name not in index for name in skeleton.names):
        return None
    source = np.array([index[name] for name in skeleton.names], dtype=np.int64)
    file_parents = np.asarray(skeleton.parents, dtype=np.int64)
    blender_parents, offsets = _offsets(rig)
    expected = np.where(file_parents >= 0, source[np.maximum(file_parents, 0)], -1)
    if not np.array_equal(blender_parents[source], expected):
        return None
    right = _to_file_frames(rig, source, file_world)
    left = _source_axes(rig) @ np.asarray(rig.rest, dtype=np.float64)[source]  # (a root: its offset is its rest)
    children = file_parents >= 0
    left[children] = affine_inverse(right[file_parents[children]]) @ offsets[source[children]]
    return source, left, right


def _file_world(keys: np.ndarray, rig: BlenderRig, file_world: np.ndarray, file_bones: list[str]) -> np.ndarray:
    """(F, file bones, 4, 4): each file bone's posed matrix in the file's model space, in its file frame (a file
    bone Blender does not have: its bind pose). Each depth of Blender's hierarchy is posed at once."""
    parents, offsets = _offsets(rig)
    world = offsets @ keys
    for level in _depths(parents)[1:]:  # parents come first: each depth from the one above
        world[:, level] = world[:, parents[level]] @ world[:, level]
    index = {name: i for i, name in enumerate(rig.names)}
    pairs = [(f, index[name]) for f, name in enumerate(file_bones) if name in index]
    out = np.empty((len(keys), len(file_bones), 4, 4))
    out[:] = file_world
    if pairs:
        to, source = (np.array(column, dtype=np.int64) for column in zip(*pairs, strict=True))
        out[:, to] = _source_axes(rig) @ (world[:, source] @ _to_file_frames(rig, source, file_world[to]))
    return out


def _to_file_frames(rig: BlenderRig, source: np.ndarray, file_world: np.ndarray) -> np.ndarray:
    """Per Blender bone ``source``, ``C = rest⁻¹ · A⁻¹ · file_world``: its pose ``P`` is ``A · P · C`` in its file
    frame (``file_world``: the bind pose of the file bone it is)."""
    rest = np.asarray(rig.rest, dtype=np.float64)[source]
    return affine_inverse(rest) @ affine_inverse(_source_axes(rig)) @ np.asarray(file_world, dtype=np.float64)


def _depths(parents: np.ndarray) -> list[np.ndarray]:
    """The bones at each depth of the hierarchy (parents before children), roots first."""
    depth = np.zeros(len(parents), dtype=np.int64)
    for i, p in enumerate(parents.tolist()):  # (a loop over the bones)
        depth[i] = depth[p] + 1 if p >= 0 else 0
    return [np.flatnonzero(depth == d) for d in range(int(depth.max(initial=-1)) + 1)]


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
        positions, matrices = action_pose(action, rig, file_world, skeleton)
        if turn is not None and len(roots):  # (``unturn_roots``, on the matrices)
            positions[:, roots] = positions[:, roots] @ turn
            matrices[:, roots] = turn.T @ matrices[:, roots]
        frames = np.concatenate([positions, matrix_to_euler(matrices)], axis=2)
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
    local[:, children] = affine_inverse(world[:, parents[children]]) @ world[:, children]
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
        positions, matrices = action_pose(action, rig, file_world, skeleton, frames)
        out[index[name]] = (positions, matrix_to_quaternion(matrices))
    return out
