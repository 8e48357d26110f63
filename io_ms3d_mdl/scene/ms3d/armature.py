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
from ...formats.binary import run_layout
from ...formats.ms3d.model import Ms3dModel
from ..bones import bone_frames
from ..names import original_name_props, unique_names
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
        # The joint as stored: an export of the unchanged bone writes these exact numbers back.
        props["ms3d_rotation"] = [float(v) for v in joint.rotation]
        props["ms3d_position"] = [float(v) for v in joint.position]
        props["ms3d_flags"] = joint.flags
        if joint.color is not None:
            props["ms3d_color"] = [float(c) for c in joint.color]
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
    every_frame = [k.frames for k in rig.rotation_keys]
    every_quat = _key_quaternions(rig, x)
    if resample:
        every_frame, every_quat = slerp_all_whole_frames(every_frame, every_quat)
    for j, (rot_frames, rotations, pk) in enumerate(zip(every_frame, every_quat, rig.position_keys, strict=True)):
        if len(rot_frames) == 0 and len(pk.frames) == 0:
            continue
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


def _key_quaternions(rig: Hierarchy, x: np.ndarray) -> list[np.ndarray]:
    """Each joint's rotation keys as sign-continuous quaternions of ``Xᵀ·R(key)·X``, for all joints at once."""
    counts = [len(k.frames) for k in rig.rotation_keys]
    if not sum(counts):
        return [np.zeros((0, 4)) for _ in counts]
    joint = np.repeat(np.arange(len(counts)), counts)
    values = np.concatenate([k.values for k in rig.rotation_keys])
    rot = np.einsum("kji,kjl,klm->kim", x[joint], euler_xyz_to_matrix(values), x[joint])
    return np.split(make_continuous(matrix_to_quaternion(rot), _run_starts(joint)), np.cumsum(counts)[:-1])


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
    """One channel's keys through :func:`slerp_all_whole_frames`."""
    (frames,), (quats,) = slerp_all_whole_frames([frames], [quats], tolerance)
    return frames, quats


def slerp_all_whole_frames(
    frames: list[np.ndarray], quats: list[np.ndarray], tolerance: float = 1e-6
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Add a key at every whole frame between two keys that differ, holding MilkShape's slerp value there, in
    every channel (sorted frames, sign-continuous quaternions) at once.

    Blender interpolates quaternion curves component by component, which drifts from a slerp as the angle
    between keys grows; with these keys every frame shows exactly what MilkShape shows. A channel spanning more
    than ``MAX_RESAMPLED_FRAMES`` keeps its keys.
    """
    counts = np.array([len(f) for f in frames], dtype=np.int64)
    if counts.sum() == 0:
        return frames, quats
    f = np.concatenate(frames).astype(np.float64)
    q = np.concatenate([np.reshape(v, (-1, 4)) for v in quats]).astype(np.float64)
    channel = np.repeat(np.arange(len(counts)), counts)
    start = np.cumsum(counts) - counts
    first = f[np.minimum(start, len(f) - 1)]
    last = f[np.minimum(start + counts - 1, len(f) - 1)]
    resampled = (counts >= 2) & (last - first <= MAX_RESAMPLED_FRAMES)
    low = np.ceil(first)
    wanted = np.where(resampled, np.maximum(np.floor(last) - low + 1, 0), 0).astype(np.int64)
    if wanted.sum() == 0:
        return frames, quats
    # Every whole frame of every resampled channel, and the key index after it in its channel (``searchsorted``
    # side="right", for all channels at once: a merge of keys and frames by channel, keys first at equal values).
    at, step = run_layout(wanted)
    whole = np.where(step == 0, low[at], low[at] + step)  # the first stays as ``ceil`` gives it (-0.0 too)
    merged = np.lexsort((np.r_[np.zeros(len(f)), np.ones(len(whole))], np.r_[f, whole], np.r_[channel, at]))
    is_key = merged < len(f)
    after = np.empty(len(whole), dtype=np.int64)
    after[merged[~is_key] - len(f)] = np.cumsum(is_key)[~is_key]  # global index of the first later key
    local = after - start[at]
    i = start[at] + np.clip(local, 1, counts[at] - 1)
    moving = np.abs(np.einsum("ij,ij->i", q[i - 1], q[i])) < 1.0 - tolerance
    present = (local >= 1) & (f[np.maximum(after - 1, 0)] == whole)  # already a key there
    extra = moving & ~present
    if not extra.any():
        return frames, quats
    extra_at, extra_frames, i = at[extra], whole[extra], after[extra]
    span = f[i] - f[i - 1]
    values = slerp(q[i - 1], q[i], (extra_frames - f[i - 1]) / np.where(span > 0, span, 1.0))
    order = np.lexsort((np.r_[f, extra_frames], np.r_[channel, extra_at]))
    out_channel = np.r_[channel, extra_at][order]
    out_frames = np.r_[f, extra_frames][order]
    out_quats = make_continuous(np.r_[q, values][order], _run_starts(out_channel))
    bounds = np.cumsum(counts + np.bincount(extra_at, minlength=len(counts)))[:-1]
    return np.split(out_frames, bounds), np.split(out_quats, bounds)


def _run_starts(channel: np.ndarray) -> np.ndarray:
    """Where each channel's run of rows (sorted by channel) starts: each is made continuous on its own."""
    return np.r_[0, np.flatnonzero(np.diff(channel)) + 1]


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
