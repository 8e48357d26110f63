"""MilkShape joints and keys as a Blender armature and action, without ``bpy``.

Blender bones point along their +Y axis; MilkShape joints have no length at all. Each bone's rest matrix is
``Q_j = C·R_j·X_j`` (C: the axis conversion, R_j: the joint's world rotation, X_j: a fixed per-bone rotation
choosing where +Y points), with its head at ``scale·C·t_j``. Because the pose channels are expressed in that same
frame, ``basis(t) = X_j⁻¹·T(scale·key position)·R(key rotation)·X_j``, the choice of X_j changes how the rig
looks, never how it deforms (proof in the tests: the posed mesh equals :func:`rig.skinned_positions`).
"""

from __future__ import annotations

import math
import re

import numpy as np

from ...budget import current_budget
from ...errors import Warnings
from ...formats.ms3d.model import Ms3dModel
from ..bones import bone_frames, original_name_props, unique_names
from ..rotations import compose, euler_xyz_to_matrix, make_continuous, matrix_to_quaternion, slerp
from ..types import ActionData, BoneChannels, BoneData, ClipData, SkeletonData
from .rig import Hierarchy

# AXIS tails: bone +Y along the joint's local +X, bone +Z along its +Z (columns are bone axes in joint space).
JOINT_AXIS_TO_BONE = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])


def build_skeleton(
    model: Ms3dModel, rig: Hierarchy, axes: np.ndarray, scale: float, tails: str, name: str
) -> tuple[SkeletonData, np.ndarray, np.ndarray]:
    """Returns the skeleton, ``bone_of_joint`` (J,) and ``X`` (J, 3, 3), the joint→bone frame rotations."""
    count = len(model.joints)
    rotation = np.einsum("ij,njk->nik", axes, rig.world[:, :3, :3])  # C·R_j
    heads = scale * (rig.world[:, :3, 3] @ axes.T)
    default_length = _default_length(model, scale)
    bone_axes, lengths, x = bone_frames(rotation, heads, rig.parent, JOINT_AXIS_TO_BONE, tails, default_length)

    names = unique_names([j.name for j in model.joints])
    bone_of_joint = np.empty(count, dtype=np.int64)
    bone_of_joint[rig.order] = np.arange(count)
    bones = []
    for j in rig.order.tolist():
        joint = model.joints[j]
        props = {"ms3d_comment": joint.comment} if joint.comment else {}
        props.update(original_name_props("ms3d_name", joint.name, names[j]))
        if joint.parent_name and rig.parent[j] < 0:
            props["ms3d_missing_parent"] = joint.parent_name
        color = tuple(float(c) for c in np.clip(joint.color, 0, 1)) if joint.color is not None else None
        bones.append(
            BoneData(
                name=names[j],
                parent=int(bone_of_joint[rig.parent[j]]) if rig.parent[j] >= 0 else -1,
                matrix=compose(bone_axes[j], heads[j]),
                length=float(lengths[j]),
                color=color,
                props=props,
            )
        )
    return SkeletonData(name, bones), bone_of_joint, x


def _default_length(model: Ms3dModel, scale: float) -> float:
    """The model's own joint size when it has a sensible one, else 5 % of the model's extent."""
    size = model.model_extra.joint_size if model.model_extra is not None else 0.0
    if math.isfinite(size) and 0 < size < 1e6:
        return size * scale
    with np.errstate(invalid="ignore", over="ignore"):  # bit-flipped (signalling) NaNs warn when cast
        points = model.vertices["position"] if len(model.vertices) else np.array([j.position for j in model.joints])
        points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
        points = points[np.isfinite(points).all(axis=1)]
        extent = float(np.ptp(points, axis=0).max()) if len(points) else 0.0
    return max(min(extent, 1e6) * 0.05, 1e-3) * scale


def build_action(
    rig: Hierarchy, x: np.ndarray, bone_of_joint: np.ndarray, scale: float, name: str, warnings: Warnings
) -> ActionData | None:
    """Pose-bone channels: rotation ``Xᵀ·R(key)·X`` as quaternions, location ``Xᵀ·scale·key`` (notes §2.6)."""
    channels = []
    lo, hi = math.inf, -math.inf
    resample = _may_resample(rig, warnings)
    for j, (rk, pk) in enumerate(zip(rig.rotation_keys, rig.position_keys, strict=True)):
        if len(rk.frames) == 0 and len(pk.frames) == 0:
            continue
        rot = np.einsum("ji,kjl,lm->kim", x[j], euler_xyz_to_matrix(rk.values), x[j])  # Xᵀ·R(key)·X
        quats = make_continuous(matrix_to_quaternion(rot))
        rot_frames, rotations = slerp_whole_frames(rk.frames, quats) if resample else (rk.frames, quats)
        channels.append(
            BoneChannels(
                bone=int(bone_of_joint[j]),
                rotation_frames=rot_frames,
                rotations=rotations,
                location_frames=pk.frames,
                locations=scale * (pk.values @ x[j]),
            )
        )
        for frames in (rot_frames, pk.frames):
            if len(frames):
                lo, hi = min(lo, float(frames.min())), max(hi, float(frames.max()))
    if not channels:
        return None
    return ActionData(name, channels, (lo, hi))


# More whole frames than this between a channel's first and last key are not resampled (hostile or absurd
# timings would otherwise ask for millions of keys); Blender then interpolates between the stored keys.
MAX_RESAMPLED_FRAMES = 100_000
KEY_BYTES = 16  # a stored MilkShape key: time + three floats


def _may_resample(rig: Hierarchy, warnings: Warnings) -> bool:
    """Resampling adds at most one key per whole frame a channel spans: bound that total by the work budget
    (relative to the keys the file stores) before any key is made; beyond it, keep the stored keys."""
    stored = sum(len(k.frames) for k in rig.rotation_keys) + sum(len(k.frames) for k in rig.position_keys)
    spans = [k.frames[-1] - k.frames[0] + 1 for k in rig.rotation_keys if len(k.frames) > 1]
    spans = [s for s in spans if s <= MAX_RESAMPLED_FRAMES + 1]  # longer channels are never resampled
    extra = int(min(sum(spans), 2**62)) if spans else 0
    limit = current_budget().resampled_keys(KEY_BYTES * stored)
    if extra <= limit:
        return True
    warnings.add(
        f"rotation keys were not resampled to whole frames: up to {extra:,} keys would exceed the work budget of "
        f"{limit:,} (raise the Work Limit); Blender interpolates between the stored keys instead"
    )
    return False


def slerp_whole_frames(frames: np.ndarray, quats: np.ndarray, tolerance: float = 1e-6) -> tuple[np.ndarray, np.ndarray]:
    """Add a key at every whole frame between two keys that differ, holding MilkShape's slerp value there.

    Blender interpolates quaternion curves component by component, which drifts from a slerp as the angle
    between keys grows; with these keys every frame shows exactly what MilkShape shows.
    """
    if len(frames) < 2 or frames[-1] - frames[0] > MAX_RESAMPLED_FRAMES:
        return frames, quats
    whole = np.arange(np.ceil(frames[0]), np.floor(frames[-1]) + 1)
    i = np.clip(np.searchsorted(frames, whole, side="right"), 1, len(frames) - 1)
    moving = np.abs(np.einsum("ij,ij->i", quats[i - 1], quats[i])) < 1.0 - tolerance
    extra = whole[moving & ~np.isin(whole, frames)]
    if len(extra) == 0:
        return frames, quats
    i = np.searchsorted(frames, extra, side="right")
    span = frames[i] - frames[i - 1]
    t = (extra - frames[i - 1]) / np.where(span > 0, span, 1.0)
    values = slerp(quats[i - 1], quats[i], t)
    order = np.argsort(np.r_[frames, extra], kind="stable")
    return np.r_[frames, extra][order], make_continuous(np.r_[quats, values][order])


_CLIP_START = re.compile(r"\bname\s*=", re.IGNORECASE)
_FIELD = re.compile(r"(\w+)\s*=\s*([^,\r\n]*)")


def parse_clips(comment: str | None) -> list[ClipData]:
    """Clip lists artists write into the model comment, e.g. ``Name=Walk, Start=2, End=14, Loop=True`` (one
    per entry, line breaks anywhere, as in dwarf.ms3d). Entries without a numeric start and end are ignored."""
    if not comment:
        return []
    starts = [m.start() for m in _CLIP_START.finditer(comment)]
    if not starts:
        return []
    clips = []
    for a, b in zip(starts, [*starts[1:], len(comment)], strict=True):
        fields = {k.lower(): v.strip() for k, v in _FIELD.findall(re.sub(r"=\s+", "=", comment[a:b]))}
        try:
            start, end = float(fields["start"]), float(fields["end"])
        except (KeyError, ValueError):
            continue
        name = fields.get("name", "")
        if name and end >= start:
            clips.append(ClipData(name, start, end, fields.get("loop", "").lower() in ("true", "1", "yes")))
    return clips
