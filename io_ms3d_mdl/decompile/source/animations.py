"""One SMD per animation, every frame as the engine poses it: the readers decode (sections, ``.ani`` blocks and
all: ``formats.source.animation``), and an included model's animations are carried over to this model's bones the
way the import does (bones it lacks keep the bind pose, or stay still in a delta). A delta animation is written as
the deltas it stores (bones without data: no rotation, no offset), to be compiled with ``delta``. The turn
studiomdl gives the root bones of every (non-delta) animation (a quarter about Z; with ``$upaxis Y`` also a quarter
about X) is undone (see :func:`unturn_roots`), so a recompile turns them back to what the model holds.

Charged to the same work budget as the import's animations; decoded in batches so one pass's temporaries stay
bounded, and each SMD is written as soon as its batch is decoded."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from ...budget import current_budget
from ...errors import FormatError, Warnings
from ...formats.smd import SmdSkeleton
from ...formats.smd.writer import nodes_text, skeleton_texts
from ...formats.source.animation import SkippedAnimation, decode_animations
from ...formats.source.includes import Included
from ...formats.source.model import MdlFile
from ...scene.rotations import quaternion_to_matrix
from ...scene.source.animation import SECTION_COST, _remap, section_count
from ..output import Output, safe_stem
from .angles import matrix_to_euler, quaternion_to_euler
from .deleted_bones import DeletedBones, fold_pose

BATCH_BONE_FRAMES = 1 << 18


@dataclass
class WrittenAnimation:
    source: int  # 0: the model; 1…: its includes in load order
    index: int  # in that source's animations
    name: str
    file: str  # relative to the output folder
    frames: int
    fps: float
    delta: bool


def write_animations(
    mdl: MdlFile,
    ani: tuple[bytes, str] | None,
    includes: list[Included],
    skeleton: SmdSkeleton,
    output: Output,
    warnings: Warnings,
    folder: str = "anims",
    replaced: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
    added: tuple[np.ndarray, np.ndarray] | None = None,
    deleted: DeletedBones | None = None,
) -> dict[tuple[int, int], WrittenAnimation]:
    """``replaced``: the model's own animations an export takes from Blender (index -> positions, rotations as
    :func:`new_actions.edited_poses` gives them); each value equal to the file's within the import's storage is
    the file's, so the bones the user did not touch keep their exact frames. ``added``: bones past the file's
    (an export's, made in Blender): their local rest (positions, rotations), held on every frame (a delta holds
    them still). ``deleted``: bones an export leaves out (``skeleton`` still has them; the SMDs do not)."""
    sources = [(mdl, ani, "")] + [(inc.mdl, inc.ani, inc.name) for inc in includes]
    taken: set[str] = set()
    chosen: list[tuple[int, int]] = []
    for s, (source, _, _) in enumerate(sources):
        for i, desc in enumerate(source.animations):
            if s and desc.name in taken:  # an included animation our model already has is the model's
                continue
            taken.add(desc.name)
            chosen.append((s, i))
    budget = current_budget()
    data_bytes = sum(len(src.data) + (len(a[0]) if a else 0) for src, a, _ in sources)
    total = budget.bone_frames(data_bytes)
    output.grant(budget.animation_text_bytes(data_bytes))
    spent = 0
    costs = []
    for s, i in chosen:
        source = sources[s][0]
        desc = source.animations[i]
        cost = max(desc.num_frames, 0) * max(len(mdl.bones), len(source.bones)) + SECTION_COST * (
            section_count(desc) - 1
        )
        budget.check(source.path, f"frames × bones of animation '{desc.name}'", cost, budget.animation_bone_frames)
        spent += cost
        budget.check(source.path, "frames × bones over all animations", spent, total)
        costs.append(cost)
    files = Counter(s for s, _ in chosen)
    for s, (_, _, label) in enumerate(sources):  # (the files are made while the first batch is decoded)
        output.expect(_animation_folder(folder, s, label), files[s])
    mappings = {
        s: np.array([{n.lower(): k for k, n in enumerate(mdl.bone_names)}.get(n.lower(), -1) for n in src.bone_names])
        for s, (src, _, _) in enumerate(sources)
        if s
    }
    written: dict[tuple[int, int], WrittenAnimation] = {}
    batch: list[tuple[int, int]] = []
    weight = 0
    for (s, i), cost in zip([*chosen, (-1, -1)], [*costs, 0], strict=True):
        if batch and (s == -1 or s != batch[0][0] or weight + cost > BATCH_BONE_FRAMES):
            _write_batch(
                sources,
                batch,
                mappings,
                mdl,
                skeleton,
                output,
                warnings,
                folder,
                written,
                replaced or {},
                added,
                deleted,
            )
            batch, weight = [], 0
        if s >= 0:
            batch.append((s, i))
            weight += cost
    return written


TURNS = (  # studiomdl's default rotation of animations: (0, 0, 90°), or (90°, 0, 90°) after $upaxis Y
    np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]),
    np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]),
)
VOTES = 8  # animations looked at to tell which


def default_turn(mdl: MdlFile, ani: tuple[bytes, str] | None) -> np.ndarray:
    """Which rotation studiomdl gave this model's animations (the QC's ``$upaxis`` is not stored): the one that
    takes the bind pose's root to frame 0's root in most of the first few whole (non-delta) animations; the usual
    Z-up turn when none tells."""
    roots = np.nonzero(mdl.bones["parent"] < 0)[0][:1]
    picks = [i for i, d in enumerate(mdl.animations) if not d.is_delta and 0 < d.num_frames <= 1000][:VOTES]
    if not len(roots) or not picks:
        return TURNS[0]
    bind = quaternion_to_matrix(mdl.bones["quat"][roots].astype(np.float64)[:, [3, 0, 1, 2]])[0]
    votes = [0, 0]
    for anim in decode_animations(mdl, picks, *(ani or (None, None))):
        if isinstance(anim, (FormatError, SkippedAnimation)):
            continue
        found = quaternion_to_matrix(anim.rotations[0, roots])[0] @ bind.T
        for k, turn in enumerate(TURNS):
            votes[k] += float(np.abs(found - turn).max()) < 0.3
    return TURNS[1] if votes[1] > votes[0] else TURNS[0]


def unturn_roots(frames: np.ndarray, rotations: np.ndarray, roots: np.ndarray, turn: np.ndarray) -> None:
    """Undo the turn studiomdl gives every animation's root bones (``$sequence`` frames are turned by its default
    rotation, the reference pose is not): each root's position and rotation taken back by ``turn``."""
    frames[:, roots, :3] = frames[:, roots, :3] @ turn
    matrices = quaternion_to_matrix(rotations[:, roots].reshape(-1, 4)).reshape(len(frames), len(roots), 3, 3)
    frames[:, roots, 3:] = matrix_to_euler(turn.T @ matrices)


def _with_added(
    positions: np.ndarray, rotations: np.ndarray, added: tuple[np.ndarray, np.ndarray], delta: bool
) -> tuple[np.ndarray, np.ndarray]:
    """A file animation's frames with the bones made in Blender at their rest (still, in a delta)."""
    frames = len(positions)
    p, q = added
    if delta:
        p, q = np.zeros_like(p), np.tile([1.0, 0.0, 0.0, 0.0], (len(q), 1))
    return (
        np.concatenate([positions, np.broadcast_to(p, (frames, *p.shape))], axis=1),
        np.concatenate([rotations, np.broadcast_to(q, (frames, *q.shape))], axis=1),
    )


POSITION_SLACK = 1e-4  # Source units: the import's key reduction (1e-5) plus float32 in Blender's units
ROTATION_SLACK = 1e-4  # per quaternion component: the import's reduction (1e-5) plus float error


def same_pose(
    edited: tuple[np.ndarray, np.ndarray], positions: np.ndarray, rotations: np.ndarray
) -> tuple[np.ndarray, np.ndarray] | None:
    """Per frame and bone, whether Blender's position and rotation (quaternions) are the file's within what the
    import's storage changed; None when the frame count changed."""
    p, q = edited
    if p.shape != positions.shape:
        return None
    same_p = (np.abs(p - positions) <= POSITION_SLACK * np.maximum(1.0, np.abs(positions))).all(axis=2)
    file_q = rotations / np.linalg.norm(rotations, axis=2, keepdims=True)
    sign = np.where(np.einsum("fbi,fbi->fb", q, file_q) < 0, -1.0, 1.0)[..., None]
    return same_p, (np.abs(q * sign - file_q) <= ROTATION_SLACK).all(axis=2)


def settle_pose(
    edited: tuple[np.ndarray, np.ndarray], positions: np.ndarray, rotations: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Blender's frames of an edited animation, each bone's value on each frame replaced by the file's where it
    is the file's (:func:`same_pose`; a frame count that changed keeps Blender's all)."""
    same = same_pose(edited, positions, rotations)
    if same is None:
        return edited
    return np.where(same[0][..., None], positions, edited[0]), np.where(same[1][..., None], rotations, edited[1])


def _animation_folder(folder: str, s: int, label: str) -> str:
    """Where the animations of source ``s`` go: the model's own in ``folder``, an included model's below it."""
    return f"{folder}/{safe_stem(label.replace('.mdl', ''))}" if s else folder


def _write_batch(
    sources, batch, mappings, mdl, skeleton, output, warnings, folder, written, replaced, added, deleted
) -> None:
    s = batch[0][0]
    source, ani, label = sources[s]
    results = decode_animations(source, [i for _, i in batch], *(ani or (None, None)))
    good = []
    for (_, i), anim in zip(batch, results, strict=True):
        desc = source.animations[i]
        if isinstance(anim, SkippedAnimation):
            warnings.add(f"animation '{desc.name}' was skipped: {anim}")
        elif isinstance(anim, FormatError):
            warnings.add(f"animation '{desc.name}' could not be decoded: {anim.reason} (byte {anim.offset})")
        else:
            warnings.extend(anim.notes)
            good.append((i, anim))
    if not good:
        return
    anims = [a for _, a in good]
    if s:
        anims = _remap(anims, mappings[s], mdl)
    sub = _animation_folder(folder, s, label)
    skeleton = deleted.skeleton if deleted is not None else skeleton  # (the SMDs leave the deleted bones out)
    roots = np.nonzero(np.asarray(skeleton.parents) < 0)[0]
    static = mdl.is_static_prop and len(mdl.bones) == 1  # a static prop's vertices are turned instead
    turn = None if static or not len(roots) else default_turn(source, ani)
    poses = []
    for (i, _), anim in zip(good, anims, strict=True):
        positions, rotations = anim.positions, anim.rotations
        if not s and i in replaced:
            positions, rotations = settle_pose(replaced[i], positions, rotations)
        elif added is not None:
            positions, rotations = _with_added(positions, rotations, added, bool(anim.delta))
        if deleted is not None:
            positions, rotations = fold_pose(positions, rotations, deleted, bool(anim.delta))
        poses.append((positions, rotations))
    frames = _batch_frames(poses, [bool(a.delta) for a in anims], roots, turn)
    nodes = nodes_text(skeleton)  # (the same in every SMD)
    for (i, _), anim, animation_frames, (text, stats) in zip(good, anims, frames, skeleton_texts(frames), strict=True):
        desc = source.animations[i]
        relative = output.name(desc.name.lstrip("@") or f"animation{i}", ".smd", sub)
        with output.open(relative) as stream:
            stream.write(nodes)
            stream.write(text)
        if stats.non_finite:
            warnings.add(f"animation '{desc.name}': {stats.non_finite} nan/inf values were written as 0")
        written[(s, i)] = WrittenAnimation(
            s, i, desc.name, relative, len(animation_frames), float(anim.fps), bool(anim.delta)
        )


def _batch_frames(
    poses: list[tuple[np.ndarray, np.ndarray]], deltas: list[bool], roots: np.ndarray, turn: np.ndarray | None
) -> list[np.ndarray]:
    """Each animation's (F, B, 6) SMD frames (positions, Euler angles; a whole animation's roots unturned), the
    batch laid end to end so the angles and the turn are one numpy pass each rather than one per animation."""
    counts = [len(p) for p, _ in poses]
    positions = np.concatenate([p for p, _ in poses])
    rotations = np.concatenate([q for _, q in poses])
    frames = np.concatenate([positions, quaternion_to_euler(rotations)], axis=2)
    if turn is not None:
        whole = np.repeat(~np.array(deltas, dtype=bool), counts)
        if whole.any():
            turned = frames[whole]
            unturn_roots(turned, rotations[whole], roots, turn)
            frames[whole] = turned
    return np.split(frames, np.cumsum(counts)[:-1])
