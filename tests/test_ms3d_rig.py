"""MilkShape rig semantics without Blender: hierarchy, weights, key timing, clips, the reference evaluator."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import ms3d_sample
from ms3d_writer import Joint, Ms3dSpec, Vertex, VertexExtra, quad_spec, write_ms3d

from io_ms3d_mdl.errors import FormatError, Warnings
from io_ms3d_mdl.formats.ms3d import read_ms3d, read_ms3d_bytes
from io_ms3d_mdl.scene.ms3d.armature import parse_clips, slerp_whole_frames
from io_ms3d_mdl.scene.ms3d.convert import Ms3dOptions, ms3d_to_scene
from io_ms3d_mdl.scene.ms3d.rig import clean_keys, hierarchy, key_frames, skin_weights, skinned_positions, world_at
from io_ms3d_mdl.scene.names import unique_names
from io_ms3d_mdl.scene.rotations import euler_xyz_to_matrix, matrix_to_quaternion


def rot(axis: str, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return {
        "x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]),
        "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
        "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]),
    }[axis]


def test_euler_is_rz_ry_rx():
    x, y, z = 0.3, -1.1, 2.0
    np.testing.assert_allclose(euler_xyz_to_matrix(np.array([x, y, z])), rot("z", z) @ rot("y", y) @ rot("x", x))


def arm_spec(**overrides) -> Ms3dSpec:
    """Two joints: 'root' at the origin and 'tip' 2 units up +Y; the tip turns 90° about Z between frames 1 and 3."""
    spec = quad_spec()
    spec.vertices = [Vertex((0, 0, 0), 0), Vertex((1, 0, 0), 0), Vertex((0, 3, 0), 1), Vertex((1, 3, 0), 1)]
    spec.joints = [
        Joint("root"),
        Joint(
            "tip",
            "root",
            position=(0, 2, 0),
            rotation_keys=[(1 / 24, (0, 0, 0)), (3 / 24, (0, 0, math.pi / 2))],
            position_keys=[(1 / 24, (0, 0, 0)), (3 / 24, (0, 0.5, 0))],
        ),
    ]
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def test_reference_evaluator_on_a_hand_worked_rig():
    model = read_ms3d_bytes(write_ms3d(arm_spec()))
    rig = hierarchy(model, Warnings())
    np.testing.assert_allclose(skinned_positions(model, rig, 1.0), model.vertices["position"], atol=1e-6)
    # frame 3: the tip joint sits at (0, 2, 0) + (0, 0.5, 0) and is turned 90° about Z; vertex (0, 3, 0) is
    # (0, 1, 0) from the joint's rest position, which turns to (-1, 0, 0): (-1, 2.5, 0). (1, 3, 0) -> (-1, 3.5, 0).
    out = skinned_positions(model, rig, 3.0)
    np.testing.assert_allclose(out[2], (-1.0, 2.5, 0.0), atol=1e-6)
    np.testing.assert_allclose(out[3], (-1.0, 3.5, 0.0), atol=1e-6)
    np.testing.assert_allclose(out[:2], model.vertices["position"][:2], atol=1e-6)
    # frame 2: halfway by slerp (45°) and lerp (0.25 up): the joint at (0, 2.25, 0), (0, 1, 0) turned 45°
    mid = skinned_positions(model, rig, 2.0)
    c = math.sqrt(0.5)
    np.testing.assert_allclose(mid[2], (-c, 2.25 + c, 0), atol=1e-6)


def test_translation_keys_are_in_the_reference_rotated_frame():
    """L(t) = T(pos)·R(rot)·T(key pos)·R(key rot): a key moving +X on a joint turned 90° about Z moves +Y."""
    spec = arm_spec()
    spec.joints[1].rotation = (0, 0, math.pi / 2)
    spec.joints[1].rotation_keys = []
    spec.joints[1].position_keys = [(1 / 24, (1, 0, 0))]
    model = read_ms3d_bytes(write_ms3d(spec))
    world = world_at(hierarchy(model, Warnings()), 1.0)
    np.testing.assert_allclose(world[1][:3, 3], (0, 3, 0), atol=1e-6)


def test_hierarchy_is_order_independent_and_finds_parents_by_name():
    spec = arm_spec()
    spec.joints = [Joint("tip", "ROOT", position=(0, 2, 0)), Joint("root")]  # child first, parent name in other case
    model = read_ms3d_bytes(write_ms3d(spec))
    rig = hierarchy(model, Warnings())
    assert rig.parent.tolist() == [1, -1] and rig.order.tolist() == [1, 0]


def test_unknown_parent_becomes_a_root_with_a_warning():
    spec = arm_spec()
    spec.joints[0].parent = "none"  # bonesgroup.ms3d does this
    model = read_ms3d_bytes(write_ms3d(spec))
    warnings = Warnings()
    rig = hierarchy(model, warnings)
    assert rig.parent.tolist() == [-1, 0]
    assert "joint 'root' names parent 'none', which does not exist" in warnings[0]
    scene = ms3d_to_scene(model)
    assert scene.skeleton.bones[0].props["ms3d_missing_parent"] == "none"


@pytest.mark.parametrize("parents", [("b", "a"), ("a", ""), ("c", "a", "b")])
def test_parent_cycles_are_refused_clearly(parents):
    spec = arm_spec()
    names = "abc"[: len(parents)]
    spec.joints = [Joint(n, p) for n, p in zip(names, parents, strict=True)]
    if parents == ("a", ""):
        spec.joints[0].parent = "a"  # its own parent
    with pytest.raises(FormatError, match=r"parents form a cycle \(.* → .*\)"):
        ms3d_to_scene(read_ms3d_bytes(write_ms3d(spec), "loop.ms3d"))


def test_duplicate_and_empty_joint_names_get_unique_bone_names():
    assert unique_names(["a", "a", "", "a.001", "a"]) == ["a", "a.001", "joint2", "a.001.001", "a.002"]


def weights_of(extra: list[VertexExtra], bone_ids: list[int], sub_version: int = 2, joints: int = 4):
    spec = Ms3dSpec(
        vertices=[Vertex((0, 0, 0), b) for b in bone_ids],
        joints=[Joint(f"j{i}") for i in range(joints)],
        vertex_extra=extra,
        vertex_extra_sub_version=sub_version,
    )
    return skin_weights(read_ms3d_bytes(write_ms3d(spec)))


def test_weights():
    ids, w = weights_of(
        [
            VertexExtra((1, 2, -1), (50, 30, 0)),  # 4th implied 20 % on an unused slot -> dropped, renormalised
            VertexExtra((1, -1, -1), (0, 0, 0)),  # all zero -> 100 % primary
            VertexExtra((1, 2, 3), (40, 30, 20)),  # four influences: 40/30/20/10
            VertexExtra((-1, -1, -1), (0, 0, 100)),  # bonesgroup: weight on an invalid id -> primary 100 %
            VertexExtra((9, -1, -1), (60, 40, 0)),  # joint 9 does not exist
            VertexExtra(),
        ],
        [0, 2, 0, 3, 1, -1],
    )
    assert ids.tolist()[0][:2] == [0, 1] and w[0].tolist() == pytest.approx([0.625, 0.375, 0, 0])
    assert ids[1].tolist() == [2, -1, -1, -1] and w[1].tolist() == pytest.approx([1, 0, 0, 0])
    assert ids[2].tolist() == [0, 1, 2, 3] and w[2].tolist() == pytest.approx([0.4, 0.3, 0.2, 0.1])
    assert ids[3].tolist()[0] == 3 and w[3].tolist() == pytest.approx([1, 0, 0, 0])
    assert ids[4].tolist()[0] == 1 and w[4].tolist() == pytest.approx([1, 0, 0, 0])
    assert ids[5].tolist() == [-1] * 4 and w[5].sum() == 0  # unweighted


def test_sub_version_1_weights_over_100_are_on_a_255_scale():
    _, w = weights_of([VertexExtra((1, -1, -1), (153, 102, 0))], [0], sub_version=1)
    assert w[0].tolist() == pytest.approx([0.6, 0.4, 0, 0])
    _, w = weights_of([VertexExtra((1, -1, -1), (60, 40, 0))], [0], sub_version=1)
    assert w[0].tolist() == pytest.approx([0.6, 0.4, 0, 0])


def test_no_vertex_extra_means_one_joint_per_vertex():
    ids, w = skin_weights(read_ms3d_bytes(write_ms3d(arm_spec())))
    assert ids[:, 0].tolist() == [0, 0, 1, 1] and (w[:, 0] == 1).all()


def test_keys_are_cleaned_per_joint_all_at_once():
    """Every joint's keys in one pass: unusable keys dropped with a warning per joint, each joint's keys sorted
    with the first of equal frames kept, joints with no keys (or none left) empty."""
    dtype = np.dtype([("time", "<f4"), ("value", "<f4", 3)])

    def keys(*rows):
        return np.array([(t, v) for t, v in rows], dtype=dtype)

    warnings = Warnings()
    channels = [
        keys((2.0, (2, 0, 0)), (1.0, (1, 0, 0)), (1.0, (9, 0, 0)), (math.nan, (0, 0, 0))),
        keys(),
        keys((1.0, (math.inf, 0, 0))),
        keys((0.5, (5, 0, 0))),
    ]
    out = clean_keys(channels, 1.0, ["a", "b", "c", "d"], warnings)
    assert [k.frames.tolist() for k in out] == [[1.0, 2.0], [], [], [0.5]]
    assert out[0].values[:, 0].tolist() == [1.0, 2.0]  # the first of the two keys at frame 1
    assert list(warnings) == [
        "joint 'a': 1 keys with unusable times or values were dropped",
        "joint 'c': 1 keys with unusable times or values were dropped",
    ]
    assert [len(k.frames) for k in clean_keys([keys((math.nan, (0, 0, 0)))], 1.0, ["a"], Warnings())] == [0]
    assert [len(k.frames) for k in clean_keys([keys(), keys()], 1.0, ["a", "b"], Warnings())] == [0, 0]


def test_key_frames_and_scene_timing():
    assert key_frames(np.array([1 / 24, 2.5 / 24], np.float32), 24.0).tolist() == pytest.approx([1.0, 2.5])
    assert key_frames(np.array([1 / 24], np.float32), 24.0)[0] == 1.0  # float32 noise snaps to the whole frame
    spec = arm_spec(fps=0.0, total_frames=2)  # fps below 1 is clamped to 1: key time is the frame
    spec.joints[1].rotation_keys = [(0.0, (0, 0, 0)), (7.0, (0, 0, 1))]  # a key at time 0 and one past the end
    scene = ms3d_to_scene(read_ms3d_bytes(write_ms3d(spec)))
    assert scene.fps == 1.0 and scene.frame_range == (0.0, 7.0)
    (channels,) = [c for c in scene.actions[0].channels if len(c.rotation_frames)]
    assert channels.rotation_frames.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]  # slerp keys at every whole frame


def test_slerp_keys_only_where_keys_differ():
    q = matrix_to_quaternion(euler_xyz_to_matrix(np.array([[0, 0, 0], [0, 0, 0], [0, 0, 1.0]])))
    frames, quats = slerp_whole_frames(np.array([1.0, 5.0, 8.0]), q)
    assert frames.tolist() == [1, 5, 6, 7, 8]
    assert np.allclose(np.linalg.norm(quats, axis=1), 1)


def test_no_animation_option():
    scene = ms3d_to_scene(read_ms3d_bytes(write_ms3d(arm_spec())), Ms3dOptions(import_animation=False))
    assert scene.skeleton is not None and scene.actions == [] and scene.fps is None and scene.frame_range is None


def test_without_keys_the_rig_is_its_reference_pose_and_keys_are_not_cleaned():
    """No animation asked for: the keys are neither cleaned nor warned about; the rest of the rig is the same."""
    spec = arm_spec()
    spec.joints[1].rotation_keys.append((math.nan, (0, 0, 0)))
    model = read_ms3d_bytes(write_ms3d(spec))
    full, warned = hierarchy(model, warnings := Warnings()), list(warnings)
    bare = hierarchy(model, warnings := Warnings(), keys=False)
    assert warned and not list(warnings)
    for name in ("parent", "order", "local", "world"):
        np.testing.assert_array_equal(getattr(bare, name), getattr(full, name))
    assert all(len(k.frames) == 0 for k in bare.rotation_keys + bare.position_keys)
    np.testing.assert_allclose(world_at(bare, 2.0), full.world)
    assert ms3d_to_scene(model, Ms3dOptions(import_animation=False)).warnings == []


def test_clips_from_the_dwarf_comment():
    clips = parse_clips(read_ms3d(ms3d_sample("akadjoker__H3DView/media/dwarf.ms3d")).model_comment)
    assert len(clips) == 19
    assert (clips[0].name, clips[0].start, clips[0].end, clips[0].loop) == ("Walk", 2, 14, True)
    assert (clips[3].name, clips[3].start, clips[3].end) == ("Crouch", 56, 69)  # "Start=\n56" across lines
    assert (clips[-1].name, clips[-1].end, clips[-1].loop) == ("Idle2", 360, True)
    assert parse_clips("just a note") == [] and parse_clips("Name=Broken, Start=x, End=3") == []


def test_bone_rest_matrices_follow_the_joints():
    for tails in ("CHILD", "AXIS"):
        model = read_ms3d_bytes(write_ms3d(arm_spec()))
        scene = ms3d_to_scene(model, Ms3dOptions(scale=2.0, bone_tails=tails))
        root, tip = scene.skeleton.bones
        np.testing.assert_allclose(tip.matrix[:3, 3], (0, 0, 4))  # (0,2,0) Y-up ×2 -> Blender Z-up
        for bone in (root, tip):
            r = bone.matrix[:3, :3]
            np.testing.assert_allclose(r @ r.T, np.eye(3), atol=1e-12)
            assert np.linalg.det(r) == pytest.approx(1.0)
        if tails == "CHILD":
            np.testing.assert_allclose(root.matrix[:3, 1], (0, 0, 1), atol=1e-12)  # root points at the tip
            assert root.length == pytest.approx(4.0)


def test_real_rigs_convert_without_warnings():
    for name in ("dwarf.ms3d", "Bird.ms3d", "bones2.ms3d", "cube.ms3d"):
        scene = ms3d_to_scene(read_ms3d(ms3d_sample(f"akadjoker__H3DView/media/{name}")))
        assert scene.skeleton is not None and scene.actions and not scene.warnings
