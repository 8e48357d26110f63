"""Decoded Source animations as Blender actions, without ``bpy``.

Pose channels hold each bone's motion relative to its rest pose, in the bone's own frame:
``basis(t) = Xᵀ·(L₀⁻¹·L(t))·X`` where ``L₀`` is the bind-pose local transform, ``L(t)`` the animated one and ``X``
the rotation from the Source bone frame to the Blender bone frame (see ``scene/bones.py``). Delta animations are
already relative (``L(t)`` is the delta), so their basis is ``Xᵀ·L(t)·X`` and the action is marked additive.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError
from ..formats.source.animation import DecodedAnimation, SkippedAnimation, decode_animation
from ..formats.source.model import MdlFile
from .rotations import make_continuous, matrix_to_quaternion, quaternion_to_matrix
from .types import ActionData, BoneChannels, SceneData


def add_source_animations(
    mdl: MdlFile, ani: tuple[bytes, str] | None, bone_axes: np.ndarray, scale: float, scene: SceneData
) -> None:
    decoded: dict[int, DecodedAnimation] = {}
    for i, anim in enumerate(mdl.animations):
        try:
            decoded[i] = decode_animation(mdl, i, *(ani or (None, None)))
        except SkippedAnimation as exc:
            scene.warnings.add(f"animation '{anim.name}' was skipped: {exc}")
        except FormatError as exc:
            scene.warnings.add(f"animation '{anim.name}' could not be decoded: {exc.reason} (byte {exc.offset})")
    if not decoded:
        return
    fps = decoded[min(decoded)].fps
    rest_rot = quaternion_to_matrix(mdl.bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]])
    rest_pos = mdl.bones["pos"].astype(np.float64)
    events = _events_by_animation(mdl)
    for i, anim in decoded.items():
        action = _action(anim, rest_rot, rest_pos, bone_axes, scale, fps / anim.fps)
        action.markers = [
            (name, cycle * (len(anim.rotations) - 1) * fps / anim.fps) for name, cycle in events.get(i, [])
        ]
        action.props = {"source_fps": anim.fps, "source_frames": len(anim.rotations), "source_delta": anim.delta}
        scene.actions.append(action)
    scene.fps = fps
    first = scene.actions[0].frame_range
    scene.frame_range = (first[0], max(first[1], first[0] + 1))
    scene.props["source_sequences"] = [
        {
            "name": s.name,
            "activity": s.activity,
            "animations": [mdl.animations[a].name for a in s.animations if 0 <= a < len(mdl.animations)],
        }
        for s in mdl.sequences
    ]


def _events_by_animation(mdl: MdlFile) -> dict[int, list[tuple[str, float]]]:
    out: dict[int, list[tuple[str, float]]] = {}
    for seq in mdl.sequences:
        if seq.animations and seq.events and 0 <= seq.animations[0] < len(mdl.animations):
            out.setdefault(seq.animations[0], []).extend(
                (e.name or f"event {e.event}", min(max(e.cycle, 0.0), 1.0)) for e in seq.events
            )
    return out


def _action(
    anim: DecodedAnimation, rest_rot: np.ndarray, rest_pos: np.ndarray, x: np.ndarray, scale: float, frame_scale: float
) -> ActionData:
    frames = np.arange(len(anim.rotations), dtype=np.float64) * frame_scale
    channels = []
    # A non-delta animation defines the whole pose: bones without data sit at their bind pose. Keying them (one
    # identity key each) keeps a previously played action from leaving them posed; deltas add, so they don't.
    bones = np.nonzero(anim.animated)[0] if anim.delta else np.arange(len(anim.animated))
    for bone in bones.tolist():
        rot = quaternion_to_matrix(anim.rotations[:, bone])  # (F, 3, 3)
        pos = anim.positions[:, bone]
        if anim.delta:
            local_rot, local_pos = rot, pos
        else:
            local_rot = np.einsum("ji,fjk->fik", rest_rot[bone], rot)  # R0ᵀ·R(t)
            local_pos = (pos - rest_pos[bone]) @ rest_rot[bone]  # R0ᵀ·(p - p0)
        xb = x[bone]
        quats = make_continuous(matrix_to_quaternion(np.einsum("ji,fjk,kl->fil", xb, local_rot, xb)))
        locs = scale * (local_pos @ xb)
        rf, rq = _collapse(frames, quats)
        lf, lv = _collapse(frames, locs)
        channels.append(BoneChannels(bone, rf, rq, lf, lv))
    return ActionData(anim.name, channels, (0.0, float(frames[-1]) if len(frames) else 0.0), additive=anim.delta)


def _collapse(frames: np.ndarray, values: np.ndarray, tolerance: float = 1e-7) -> tuple[np.ndarray, np.ndarray]:
    """A channel that never moves needs one key, not one per frame."""
    if len(values) > 1 and np.abs(values - values[0]).max() <= tolerance:
        return frames[:1], values[:1]
    return frames, values
