"""The skeleton of an export: the file's bones, those the user moved in Blender at their new rest, and bones made
in Blender added after them (``edits.SourceEdits``).

A bone's frame in Blender may differ from the file's by a turn the import chose (its bone orientation); that turn
is fixed per bone, so a moved bone's new frame is its Blender rest now, times the step from its Blender rest at
import to the file's frame. A new bone has no file frame: Blender's own is taken (in Source units and axes). A bone
neither the user moved nor whose parent moved keeps the file's exact rest values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...formats.smd import SmdSkeleton
from .angles import matrix_to_euler
from .deleted_bones import DeletedBones, find_deleted, fold_rest
from .new_actions import BlenderRig, local_pose, to_source

MOVED = 1e-5  # relative to the model's size: a rest further from the import's is an edit (float32 holds ~1e-7)


@dataclass
class EditedSkeleton:
    skeleton: SmdSkeleton  # the file's bones, then the new ones
    world: np.ndarray  # (B', 4, 4) rest in model space
    rest: np.ndarray  # (1, B', 6) local rest: position, Euler angles (the reference SMD's frame)
    new: int  # bones at the end that the file does not have
    # without the bones deleted in Blender (``deleted_bones.without_deleted``): which they were, and the skeleton
    # with them (the file's data is indexed by it)
    deleted: DeletedBones | None = None
    full: EditedSkeleton | None = None

    @property
    def whole(self) -> EditedSkeleton:
        """The skeleton with the deleted bones (itself when none was)."""
        return self.full if self.full is not None else self


def edited_skeleton(
    skeleton: SmdSkeleton, world: np.ndarray, rest: np.ndarray, rig: BlenderRig | None
) -> EditedSkeleton:
    """``skeleton``, ``world`` (model space) and ``rest`` (1, B, 6) are the file's; ``rig`` Blender's armature."""
    if rig is None:
        return EditedSkeleton(skeleton, world, rest, 0)
    names = list(skeleton.names)
    parents = list(np.asarray(skeleton.parents).tolist())
    world = world.copy()
    index = {n: i for i, n in enumerate(names)}
    now = to_source(rig.rest, rig)
    size = max(float(np.abs(world[:, :3, 3]).max(initial=0.0)), 1.0)
    changed = np.zeros(len(names), bool)
    if rig.imported is not None:
        was = to_source(rig.imported, rig)
        known = np.isfinite(rig.imported).all(axis=(1, 2))
        moved = known & (np.abs(rig.rest - rig.imported).max(axis=(1, 2), initial=0.0) > MOVED * size * rig.scale)
        for i in np.flatnonzero(moved).tolist():
            f = index.get(rig.names[i])
            if f is not None:
                world[f] = now[i] @ np.linalg.inv(was[i]) @ world[f]
                changed[f] = True
    added = []
    for i, name in enumerate(rig.names):
        if name in index:
            continue
        p = int(rig.parents[i])
        index[name] = len(names)
        names.append(name)
        parents.append(index[rig.names[p]] if p >= 0 else -1)
        added.append(now[i])
    if added:
        world = np.concatenate([world, np.array(added)])
        changed = np.concatenate([changed, np.ones(len(added), bool)])
    edited = SmdSkeleton(names, np.array(parents, np.int64))
    redo = changed | np.where(edited.parents >= 0, changed[np.maximum(edited.parents, 0)], False)  # or its parent
    full = np.zeros((1, len(names), 6))
    full[0, : rest.shape[1]] = rest[0]
    positions, matrices = local_pose(world[None], edited)
    full[0, redo, :3] = positions[0, redo]
    full[0, redo, 3:] = matrix_to_euler(matrices[0, redo])
    return EditedSkeleton(edited, world, full, len(added))


def without_deleted(edited: EditedSkeleton, names: list[str]) -> EditedSkeleton:
    """``edited`` (the full skeleton) without the bones named in ``names``; itself when none is in it."""
    deleted = find_deleted(edited.skeleton, names)
    if deleted is None:
        return edited
    world, rest = fold_rest(edited.world, edited.rest, deleted)
    return EditedSkeleton(deleted.skeleton, world, rest, edited.new, deleted=deleted, full=edited)
