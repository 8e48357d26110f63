"""MilkShape's skeleton exactly as MilkShape plays it (notes §1.3, §2), in numpy, no ``bpy``.

- reference  ``L = T(position)·R(rotation)``, ``R = Rz·Ry·Rx``; ``G = G_parent·L`` (parents found by name)
- animated   ``L(t) = T(position)·R(rotation)·T(key position(t))·R(key rotation(t))``; frame = time × fps
- skinning   ``v' = Σ wᵢ·Gᵢ(t)·Gᵢ⁻¹·v`` with up to four influences on a 0–100 scale

This module is also the *reference evaluator* the Blender tests compare the imported rig against.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import FormatError, Warnings
from ...formats.ms3d.model import Ms3dModel
from ...formats.ms3d.reader import bone_indices
from ..rotations import compose, euler_xyz_to_matrix, matrix_to_quaternion, quaternion_to_matrix, slerp

# Blender's last usable frame (MAXFRAME); keys beyond it cannot be shown.
MAX_FRAME = 1_048_574


@dataclass
class Keys:
    """One joint channel's keys, cleaned: finite, sorted by frame, one key per frame."""

    frames: np.ndarray  # (K,) float64
    values: np.ndarray  # (K, 3) float64: Euler radians or a translation


@dataclass
class Hierarchy:
    parent: np.ndarray  # (J,) joint index of each joint's parent, -1 for roots
    order: np.ndarray  # (J,) joint indices, every parent before its children
    local: np.ndarray  # (J, 4, 4) reference L
    world: np.ndarray  # (J, 4, 4) reference G
    rotation_keys: list[Keys]
    position_keys: list[Keys]


def effective_fps(model: Ms3dModel) -> float:
    """Key time × fps gives frames; rates below 1 (or invalid) are clamped to 1 as MilkShape's viewer does."""
    fps = model.fps
    return fps if np.isfinite(fps) and fps >= 1.0 else 1.0


def key_frames(times: np.ndarray, fps: float) -> np.ndarray:
    """Frames of key times; values within 1e-3 of a whole frame snap to it (float32 times rarely land exactly)."""
    with np.errstate(invalid="ignore", over="ignore"):
        frames = np.asarray(times, dtype=np.float64) * fps
        nearest = np.round(frames)
        return np.where(np.abs(frames - nearest) < 1e-3, nearest, frames)


def hierarchy(model: Ms3dModel, warnings: Warnings, keys: bool = True) -> Hierarchy:
    """The joints' tree and reference pose, with their cleaned keys; ``keys=False`` (no animation asked for) leaves
    the keys out (the rig then holds its reference pose) and skips their cleaning and its warnings."""
    joints = model.joints
    count = len(joints)
    exact: dict[str, int] = {}
    folded: dict[str, int] = {}
    for i, joint in enumerate(joints):
        exact.setdefault(joint.name, i)
        folded.setdefault(joint.name.lower(), i)
    parent = np.full(count, -1, dtype=np.int64)
    for i, joint in enumerate(joints):
        name = joint.parent_name
        if not name:
            continue
        found = exact.get(name, folded.get(name.lower()))
        if found is None:
            warnings.add(f"joint '{joint.name}' names parent '{name}', which does not exist; it becomes a root")
        else:
            parent[i] = found
    order = _parents_first(parent, joints, model.path)
    with np.errstate(invalid="ignore"):  # bit-flipped (signalling) NaNs warn when cast; they are replaced below
        rotations = np.array([j.rotation for j in joints], dtype=np.float64).reshape(count, 3)
        positions = np.array([j.position for j in joints], dtype=np.float64).reshape(count, 3)
    for what, values in (("rotations", rotations), ("positions", positions)):
        broken = ~np.isfinite(values)
        if broken.any():
            warnings.add(f"{int(broken.any(axis=1).sum())} joint reference {what} were not finite numbers; set to 0")
            values[broken] = 0.0
    local = compose(euler_xyz_to_matrix(rotations), positions)
    world = local.copy()
    for j in order:
        if parent[j] >= 0:
            world[j] = world[parent[j]] @ local[j]
    if not keys:
        none = [Keys(np.zeros(0), np.zeros((0, 3))) for _ in joints]
        return Hierarchy(parent, order, local, world, none, list(none))
    fps = effective_fps(model)
    names = [j.name for j in joints]
    rotation_keys = clean_keys([j.rotation_keys for j in joints], fps, names, warnings)
    position_keys = clean_keys([j.position_keys for j in joints], fps, names, warnings)
    return Hierarchy(parent, order, local, world, rotation_keys, position_keys)


def clean_keys(channels: list[np.ndarray], fps: float, joints: list[str], warnings: Warnings) -> list[Keys]:
    """Each joint's keys as frames, keeping only finite ones inside Blender's frame range, sorted, one per frame.
    All joints at once: per joint, a dozen numpy calls on a few keys cost more than the keys themselves."""
    counts = np.array([len(c) for c in channels], dtype=np.int64)
    if not counts.any():
        return [Keys(np.zeros(0), np.zeros((0, 3))) for _ in channels]
    keys = np.concatenate(channels)
    joint = np.repeat(np.arange(len(channels)), counts)
    frames = key_frames(keys["time"], fps)
    values = keys["value"].astype(np.float64).reshape(-1, 3)
    usable = np.isfinite(frames) & np.isfinite(values).all(axis=1) & (np.abs(frames) <= MAX_FRAME)
    if not usable.all():
        dropped = np.bincount(joint[~usable], minlength=len(channels))
        for j in np.flatnonzero(dropped).tolist():
            warnings.add(f"joint '{joints[j]}': {int(dropped[j])} keys with unusable times or values were dropped")
    frames, values, joint = frames[usable], values[usable], joint[usable]
    order = np.lexsort((frames, joint))  # by joint, then frame; stable, so the first of equal frames stays first
    frames, values, joint = frames[order], values[order], joint[order]
    first = np.r_[len(frames) > 0, (frames[1:] != frames[:-1]) | (joint[1:] != joint[:-1])][: len(frames)]
    frames, values, joint = frames[first], values[first], joint[first]
    bounds = np.cumsum(np.bincount(joint, minlength=len(channels)))[:-1].tolist()
    return [Keys(f, v) for f, v in zip(np.split(frames, bounds), np.split(values, bounds), strict=True)]


def _parents_first(parent: np.ndarray, joints: list, path: str | None) -> np.ndarray:
    """Topological order; any joint left over sits on a parent cycle, which no pose can be computed for."""
    children: dict[int, list[int]] = {}
    for j, p in enumerate(parent.tolist()):
        children.setdefault(p, []).append(j)
    order: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack:
        j = stack.pop()
        order.append(j)
        stack.extend(reversed(children.get(j, [])))
    if len(order) != len(parent):
        stuck = sorted(set(range(len(parent))) - set(order))
        j, chain = stuck[0], []
        while j not in chain:
            chain.append(j)
            j = int(parent[j])
        names = " → ".join(joints[k].name for k in [*chain[chain.index(j) :], j])
        raise FormatError(path, None, f"the joints' parents form a cycle ({names}); the skeleton cannot be built")
    return np.array(order, dtype=np.int64)


def _sample_rotation(keys: Keys, frame: float) -> np.ndarray:
    """Key rotation at ``frame``: slerp between the neighbouring keys, held before the first and after the last."""
    if len(keys.frames) == 0:
        return np.eye(3)
    frames = keys.frames
    quats = matrix_to_quaternion(euler_xyz_to_matrix(keys.values))
    i = int(np.searchsorted(frames, frame, side="right"))
    if i == 0:
        return quaternion_to_matrix(quats[0])
    if i >= len(frames):
        return quaternion_to_matrix(quats[-1])
    span = frames[i] - frames[i - 1]
    t = (frame - frames[i - 1]) / span if span > 0 else 1.0
    return quaternion_to_matrix(slerp(quats[i - 1], quats[i], t))


def _sample_position(keys: Keys, frame: float) -> np.ndarray:
    if len(keys.frames) == 0:
        return np.zeros(3)
    return np.array([np.interp(frame, keys.frames, keys.values[:, k]) for k in range(3)])


def world_at(rig: Hierarchy, frame: float) -> np.ndarray:
    """(J, 4, 4) animated G(t) at ``frame``."""
    world = np.empty_like(rig.world)
    for j in rig.order:
        rotation = _sample_rotation(rig.rotation_keys[j], frame)
        local = rig.local[j] @ compose(rotation, _sample_position(rig.position_keys[j], frame))
        world[j] = world[rig.parent[j]] @ local if rig.parent[j] >= 0 else local
    return world


def skin_weights(model: Ms3dModel) -> tuple[np.ndarray, np.ndarray]:
    """(V, 4) joint indices (-1 unused) and weights (rows sum to 1, or 0 for unweighted vertices).

    Slots: the vertex's ``boneId`` with ``weights[0]``, then the extra ids with ``weights[1..2]`` and the implied
    fourth ``100 - sum``. All-zero weights mean 100 % on the primary joint. Sub-version 1 weights over 100 are on
    a 0–255 scale (notes §1.3). Invalid joint ids are dropped and the rest renormalised.
    """
    count, num_joints = len(model.vertices), len(model.joints)
    ids = np.full((count, 4), -1, dtype=np.int32)
    weights = np.zeros((count, 4), dtype=np.float64)
    ids[:, 0] = bone_indices(model.vertices["bone_id"])
    extra = model.vertex_extra
    if extra is None:
        weights[:, 0] = 1.0
    else:
        stored = extra.weights.astype(np.float64)
        scale = 255.0 if extra.sub_version == 1 and stored.size and stored.max() > 100 else 100.0
        ids[:, 1:] = extra.bone_ids
        weights[:, :3] = stored / scale
        weights[:, 3] = np.clip(1.0 - weights[:, :3].sum(axis=1), 0.0, 1.0)
        all_zero = ~stored.any(axis=1)
        weights[all_zero] = (1.0, 0.0, 0.0, 0.0)
    invalid = (ids < 0) | (ids >= num_joints)
    weights[invalid] = 0.0
    ids[invalid | (weights <= 0)] = -1
    weights[ids < 0] = 0.0
    total = weights.sum(axis=1)
    primary_valid = ~invalid[:, 0]
    fallback = (total <= 0) & primary_valid  # every slot dropped: all on the primary joint, as the viewers do
    ids[fallback, 0] = bone_indices(model.vertices["bone_id"])[fallback]
    weights[fallback, 0] = total[fallback] = 1.0
    weights[total > 0] /= total[total > 0, None]
    return ids, weights.astype(np.float32)


def skinned_positions(model: Ms3dModel, rig: Hierarchy, frame: float) -> np.ndarray:
    """Reference: every vertex of the file at ``frame`` in MilkShape space (unweighted vertices stay put)."""
    positions = model.vertices["position"].astype(np.float64)
    ids, weights = skin_weights(model)
    deform = world_at(rig, frame) @ np.linalg.inv(rig.world)  # (J, 4, 4)
    out = np.zeros_like(positions)
    homogeneous = np.c_[positions, np.ones(len(positions))]
    for slot in range(4):
        valid = ids[:, slot] >= 0
        moved = np.einsum("vij,vj->vi", deform[ids[valid, slot]], homogeneous[valid])[:, :3]
        out[valid] += weights[valid, slot, None] * moved
    unweighted = weights.sum(axis=1) == 0
    out[unweighted] = positions[unweighted]
    return out
