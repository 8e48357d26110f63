"""Bones the user deleted in Blender, taken out of an export's skeleton (``edits.SourceEdits.deleted``).

Blender re-parents a deleted bone's children to its parent; the export does the same in the file's hierarchy: each
bone's heir is itself, or its nearest surviving ancestor. Weights on a deleted bone move to its heir; a surviving
child's frames are made local to its new parent by composing it with the deleted bones between them (per bone, all
frames at once); QC commands naming a deleted bone are re-targeted to the heir or dropped (``qc.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ...formats.smd import SmdSkeleton
from ...scene.rotations import compose, euler_xyz_to_matrix, matrix_to_quaternion, quaternion_to_matrix
from ...scene.types import ObjectData, SkinData
from .angles import matrix_to_euler


@dataclass
class DeletedBones:
    """Over the full skeleton (the file's bones, then those made in Blender)."""

    names: list[str]  # the deleted bones
    kept: np.ndarray  # (B,) bool
    heir: np.ndarray  # (B,) itself if kept, else its nearest kept ancestor; -1: none (a deleted root's line)
    parents: np.ndarray  # (B,) the full skeleton's
    skeleton: SmdSkeleton  # the written one: the kept bones, each under its nearest kept ancestor

    @property
    def written(self) -> np.ndarray:
        """(B,) each bone's index in the written skeleton: its heir's (a bone with no heir: the first root's)."""
        index = np.cumsum(self.kept) - 1
        return np.where(self.heir >= 0, index[np.maximum(self.heir, 0)], 0)


def find_deleted(skeleton: SmdSkeleton, deleted: list[str]) -> DeletedBones | None:
    """The bones of ``skeleton`` named in ``deleted``; None when none is (a plain export)."""
    gone = set(deleted)
    kept = np.array([n not in gone for n in skeleton.names], bool)
    if kept.all():
        return None
    if not kept.any():
        raise ValueError("every bone of the model was deleted (an SMD needs at least one)")
    parents = np.asarray(skeleton.parents, np.int64)
    heir = np.arange(len(kept))
    heir[~kept] = parents[~kept]
    for _ in range(len(kept)):  # each pass climbs one more deleted generation (a chain of deleted bones)
        step = (heir >= 0) & ~kept[np.maximum(heir, 0)]
        if not step.any():
            break
        heir[step] = parents[heir[step]]
    index = np.cumsum(kept) - 1
    up = np.where(parents >= 0, heir[np.maximum(parents, 0)], -1)  # each bone's nearest kept ancestor
    new_parents = np.where(up >= 0, index[np.maximum(up, 0)], -1)[kept]
    names = [n for n, k in zip(skeleton.names, kept.tolist(), strict=True) if k]
    return DeletedBones(
        [n for n in skeleton.names if n in gone], kept, heir, parents, SmdSkeleton(names, new_parents.astype(np.int64))
    )


def fold_skin(obj: ObjectData, deleted: DeletedBones) -> ObjectData:
    """``obj`` with its influences (indices into the full skeleton) on the written skeleton: a deleted bone's
    weight moved to its heir, two influences on one bone merged."""
    if obj.skin is None:
        return obj
    ids = np.asarray(obj.skin.bone_indices, np.int64)
    weights = np.asarray(obj.skin.weights, np.float32).copy()
    mapped = np.where(ids >= 0, deleted.written[np.maximum(ids, 0)], -1)
    for j in range(1, mapped.shape[1]):  # (per influence column: a handful)
        for i in range(j):
            same = (mapped[:, j] == mapped[:, i]) & (mapped[:, j] >= 0)
            weights[same, i] += weights[same, j]
            mapped[same, j], weights[same, j] = -1, 0.0
    return ObjectData(obj.name, obj.mesh, obj.props, skin=SkinData(mapped.astype(np.int32), weights))


def moved_note(objects: list[ObjectData], deleted: DeletedBones) -> list[str]:
    """The warning for the vertices of ``objects`` (skins on the full skeleton) weighted to a deleted bone."""
    count = 0
    for obj in objects:
        if obj.skin is not None:
            ids = np.asarray(obj.skin.bone_indices, np.int64)
            on = (ids >= 0) & ~deleted.kept[np.maximum(ids, 0)] & (np.asarray(obj.skin.weights) > 0)
            count += int(on.any(axis=1).sum())
    if not count:
        return []
    return [
        f"{count} vertices weighted to bones deleted in Blender: their weight moved to the nearest surviving ancestor"
    ]


def deleted_note(deleted: DeletedBones) -> str:
    return (
        f"{len(deleted.names)} bones deleted in Blender are left out of the SMDs (their children under the nearest"
        f" surviving ancestor), e.g. '{deleted.names[0]}'"
    )


def fold_pose(
    positions: np.ndarray, rotations: np.ndarray, deleted: DeletedBones, delta: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """Frames of the full skeleton ((F, B, 3) positions, (F, B, 4) quaternions w-first, local to each parent) on the
    written one: a kept child of a deleted bone takes the deleted bones between it and its new parent into its own
    frame, so its place in the model does not change. A delta's children keep their own deltas (they compose only
    approximately)."""
    p, q = positions[:, deleted.kept], rotations[:, deleted.kept]
    if delta:
        return p, q
    folded = _folded(lambda b: compose(quaternion_to_matrix(rotations[:, b]), positions[:, b]), deleted)
    if folded:
        p, q = p.copy(), q.copy()
    for bone, matrix in folded:
        p[:, bone] = matrix[:, :3, 3]
        q[:, bone] = matrix_to_quaternion(matrix[:, :3, :3])
    return p, q


def fold_frames(frames: np.ndarray, deleted: DeletedBones) -> np.ndarray:
    """``fold_pose`` for an SMD's frames of the full skeleton: (F, B, 6) positions and Euler angles."""
    out = frames[:, deleted.kept]
    folded = _folded(lambda b: compose(euler_xyz_to_matrix(frames[:, b, 3:]), frames[:, b, :3]), deleted)
    if folded:
        out = out.copy()
    for bone, matrix in folded:
        out[:, bone, :3] = matrix[:, :3, 3]
        out[:, bone, 3:] = matrix_to_euler(matrix[:, :3, :3])
    return out


def _folded(local: Callable[[int], np.ndarray], deleted: DeletedBones) -> list[tuple[int, np.ndarray]]:
    """Each kept child of a deleted bone (by its index in the written skeleton) and its (F, 4, 4) frames local to
    its nearest kept ancestor: its own ``local(bone)`` after those of the deleted bones between them."""
    kept, parents = deleted.kept, deleted.parents
    index = np.cumsum(kept) - 1
    out = []
    for bone in np.flatnonzero(kept & (parents >= 0) & ~kept[np.maximum(parents, 0)]).tolist():  # per bone, all frames
        matrix = local(bone)
        up = int(parents[bone])
        while up >= 0 and not kept[up]:
            matrix = local(up) @ matrix
            up = int(parents[up])
        out.append((int(index[bone]), matrix))
    return out


def fold_rest(world: np.ndarray, rest: np.ndarray, deleted: DeletedBones) -> tuple[np.ndarray, np.ndarray]:
    """The written skeleton's model-space rest (B', 4, 4) and local rest (1, B', 6): the kept bones' own, a
    re-parented one's made local to its new parent."""
    kept = deleted.kept
    world, rest = world[kept], rest[:, kept].copy()
    parents = deleted.parents
    orphans = (kept & (parents >= 0) & ~kept[np.maximum(parents, 0)])[kept]
    if orphans.any():
        new_parents = deleted.skeleton.parents[orphans]
        local = world[orphans].copy()
        under = new_parents >= 0
        local[under] = np.linalg.inv(world[new_parents[under]]) @ world[orphans][under]
        rest[0, orphans, :3] = local[:, :3, 3]
        rest[0, orphans, 3:] = matrix_to_euler(local[:, :3, :3])
    return world, rest
