"""The pose an export writes for an action made in Blender (``decompile.source.new_actions.action_pose``), without
Blender: both of its ways (a bone's keys between two fixed matrices where the hierarchies agree, the whole
armature posed first where they do not) against the plain formula worked frame by frame with ``np.linalg.inv``, and
the batched affine inverse they use against numpy's."""

from __future__ import annotations

import numpy as np
import pytest

from io_ms3d_mdl.decompile.source import new_actions
from io_ms3d_mdl.decompile.source.new_actions import BlenderRig, action_pose
from io_ms3d_mdl.formats.smd import SmdSkeleton
from io_ms3d_mdl.scene.rotations import affine_inverse, compose, quaternion_to_matrix
from io_ms3d_mdl.scene.types import ActionData, BoneChannels

NAMES = ["root", "pelvis", "spine", "head", "arm_l", "arm_r", "hand_l"]
PARENTS = [-1, 0, 1, 2, 2, 2, 4]


def affine(rng: np.random.Generator, count: int, scaled: bool = False) -> np.ndarray:
    q = rng.normal(size=(count, 4))
    m = compose(quaternion_to_matrix(q), rng.normal(scale=20.0, size=(count, 3)))
    if scaled:  # (an armature object scaled unevenly: its rests are no longer rigid)
        m[:, :3, :3] *= rng.uniform(0.5, 2.0, size=(count, 1, 3))
    return m


def make_rig(rng: np.random.Generator, names: list[str], parents: list[int], scaled: bool) -> BlenderRig:
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # (the import's forward/up axes)
    return BlenderRig(names, np.array(parents), affine(rng, len(names), scaled), turn, 0.0254, 30.0)


def make_action(rng: np.random.Generator, bones: int) -> ActionData:
    channels = []
    for bone in range(bones):
        if bone == 3:  # (a bone without keys: at its rest)
            continue
        rotation_frames = np.sort(rng.choice(np.arange(1.0, 40.0), size=6, replace=False))
        location_frames = np.array([1.0, 17.0, 39.0]) if bone % 2 else np.zeros(0)
        channels.append(
            BoneChannels(
                bone,
                rotation_frames,
                rng.normal(size=(6, 4)),
                location_frames,
                rng.normal(size=(len(location_frames), 3)),
            )
        )
    return ActionData("made", channels, (1.0, 39.0))


def plain(action: ActionData, rig: BlenderRig, file_world: np.ndarray, skeleton: SmdSkeleton, frames: np.ndarray):
    """The formula of the module's docstring, one frame and one bone at a time."""
    index = {name: i for i, name in enumerate(rig.names)}

    def to_source(m: np.ndarray) -> np.ndarray:
        out = m.copy()
        out[:3, :3] = rig.turn.T @ m[:3, :3]
        out[:3, 3] = m[:3, 3] @ rig.turn / rig.scale
        return out

    positions = np.zeros((len(frames), len(skeleton.names), 3))
    rotations = np.zeros((len(frames), len(skeleton.names), 3, 3))
    for f, frame in enumerate(frames):
        world = []
        for b in range(len(rig.names)):
            q, t = np.array([1.0, 0.0, 0.0, 0.0]), np.zeros(3)
            for channel in action.channels:
                if channel.bone == b and len(channel.rotation_frames):
                    q = np.array([np.interp(frame, channel.rotation_frames, c) for c in channel.rotations.T])
                if channel.bone == b and len(channel.location_frames):
                    t = np.array([np.interp(frame, channel.location_frames, c) for c in channel.locations.T])
            keys = compose(quaternion_to_matrix(q), t)
            p = int(rig.parents[b])
            offset = rig.rest[b] if p < 0 else np.linalg.inv(rig.rest[p]) @ rig.rest[b]
            world.append(offset @ keys if p < 0 else world[p] @ offset @ keys)
        model = []
        for k, name in enumerate(skeleton.names):
            b = index.get(name)
            fixed = file_world[k] if b is None else np.linalg.inv(to_source(rig.rest[b])) @ file_world[k]
            model.append(fixed if b is None else to_source(world[b]) @ fixed)
        for k, p in enumerate(skeleton.parents.tolist()):
            local = model[k] if p < 0 else np.linalg.inv(model[p]) @ model[k]
            positions[f, k], rotations[f, k] = local[:3, 3], local[:3, :3]
    return positions, rotations


@pytest.mark.parametrize("scaled", [False, True])
@pytest.mark.parametrize(
    ("file_names", "file_parents", "direct"),
    [
        (NAMES, PARENTS, True),  # the model as imported
        (["root", "pelvis", "spine", "head", "arm_r", "arm_l", "hand_l"], [-1, 0, 1, 2, 2, 2, 5], True),  # reordered
        (["root", "pelvis", "spine", "head", "arm_l", "hand_l"], [-1, 0, 1, 2, 2, 4], True),  # arm_r not written
        (["root", "pelvis", "spine", "head", "arm_l", "arm_l", "hand_l"], [-1, 0, 1, 2, 2, 2, 4], True),  # repeated
        (["root", "pelvis", "spine", "head", "arm_l", "gone", "hand_l"], [-1, 0, 1, 2, 2, 2, 4], False),  # no "gone"
        (["root", "pelvis", "spine", "head", "arm_l", "arm_r", "hand_l"], [-1, 0, 1, 2, 2, 2, 1], False),  # reparented
        (["pelvis", "spine", "head"], [-1, 0, 1], False),  # a file root under a Blender bone
    ],
)
def test_the_pose_equals_the_formula_worked_frame_by_frame(file_names, file_parents, direct, scaled):
    rng = np.random.default_rng(7)
    rig = make_rig(rng, NAMES, PARENTS, scaled)
    action = make_action(rng, len(NAMES))
    skeleton = SmdSkeleton(file_names, np.array(file_parents))
    file_world = affine(rng, len(file_names))
    assert (new_actions._direct(rig, file_world, skeleton) is not None) == direct
    frames = np.array([1.0, 2.5, 17.0, 30.25, 39.0])
    positions, rotations = action_pose(action, rig, file_world, skeleton, frames)
    want_positions, want_rotations = plain(action, rig, file_world, skeleton, frames)
    assert np.allclose(positions, want_positions, rtol=0, atol=1e-7 * np.abs(want_positions).max())
    assert np.allclose(rotations, want_rotations, rtol=0, atol=1e-9 * np.abs(want_rotations).max())


@pytest.mark.parametrize(
    ("file_names", "file_parents"), [(NAMES, PARENTS), (["pelvis", "spine", "head", "gone"], [-1, 0, 1, 1])]
)
def test_an_armature_object_moved_turned_or_scaled_after_the_import_poses_the_same(file_names, file_parents):
    """The pose is the armature's (its object's matrix undone), not the world's: a world-space turn about a bone
    its object moved put the bone 10 units off in the file for an armature moved 10 units."""
    rng = np.random.default_rng(5)
    rig = make_rig(rng, NAMES, PARENTS, False)
    action = make_action(rng, len(NAMES))
    skeleton = SmdSkeleton(file_names, np.array(file_parents))
    file_world = affine(rng, len(file_names))
    frames = np.array([1.0, 9.5, 39.0])
    want_positions, want_rotations = action_pose(action, rig, file_world, skeleton, frames)
    as_imported = np.eye(4)
    as_imported[:3, :3] = rig.turn
    for moved in (np.diag([1.3, 0.6, 1.0, 1.0]), np.diag([-1.0, 1.0, 1.0, 1.0]), affine(rng, 1, True)[0]):
        armature = moved @ as_imported
        placed = BlenderRig(
            rig.names,
            rig.parents,
            armature @ np.linalg.inv(as_imported) @ rig.rest,
            rig.turn,
            rig.scale,
            rig.fps,
            armature=armature,
        )
        positions, rotations = action_pose(action, placed, file_world, skeleton, frames)
        assert np.allclose(positions, want_positions, rtol=0, atol=1e-9 * np.abs(want_positions).max())
        assert np.allclose(rotations, want_rotations, rtol=0, atol=1e-9)


def test_the_default_frames_are_each_whole_frame_of_the_range():
    rng = np.random.default_rng(3)
    rig = make_rig(rng, NAMES, PARENTS, False)
    action = make_action(rng, len(NAMES))
    skeleton = SmdSkeleton(NAMES, np.array(PARENTS))
    positions, _ = action_pose(action, rig, affine(rng, len(NAMES)), skeleton)
    assert positions.shape == (39, len(NAMES), 3)


@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (9000,)])  # (9000: more than one block of AFFINE_BLOCK)
def test_the_affine_inverse_is_numpys(shape):
    rng = np.random.default_rng(11)
    m = np.zeros((*shape, 4, 4))
    m[..., :3, :] = rng.normal(size=(*shape, 3, 4))
    m[..., 3, 3] = 1.0
    inverse = affine_inverse(m)
    assert inverse.shape == m.shape
    assert np.allclose(inverse @ m, np.eye(4), rtol=0, atol=1e-8)
    assert np.allclose(inverse, np.linalg.inv(m), rtol=1e-6, atol=1e-9)


def test_a_singular_matrix_inverts_to_non_finite_values_not_an_error():
    m = np.eye(4)
    m[0, 0] = 0.0
    inverse = affine_inverse(m)
    assert not np.isfinite(inverse[:3]).all()
    assert inverse[3].tolist() == [0.0, 0.0, 0.0, 1.0]
