"""Source animation decoding against values worked out from the raw payloads the test writes, and on the samples."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import sample_files, samples_dir
from source_writer import SAnimation, SBone, SNode, character_spec, encode_q48, encode_q64, write_mdl

from io_ms3d_mdl.formats.source import find_ani, read_mdl, read_mdl_bytes
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.formats.source.animation_values import (
    euler_to_quaternion,
    half_to_float,
    quaternion48,
    quaternion64,
)


def quat_about_z(angle: float) -> tuple[float, float, float, float]:
    return (math.cos(angle / 2), 0.0, 0.0, math.sin(angle / 2))


def test_compressed_values():
    q = quat_about_z(1.0)
    np.testing.assert_allclose(quaternion48(encode_q48(q)), q, atol=1e-4)
    np.testing.assert_allclose(quaternion64(encode_q64(q)), q, atol=1e-6)
    neg = (-0.5, 0.5, -0.5, 0.5)
    np.testing.assert_allclose(quaternion48(encode_q48(neg)), neg, atol=1e-4)
    bits = np.array([0x3C00, 0x7C00, 0xFC00, 0x7E00], dtype="<u2")  # 1.0, +inf, -inf, NaN
    assert half_to_float(bits).tolist() == [1.0, 65504.0, -65504.0, 0.0]
    # AngleQuaternion is Rz·Ry·Rx, like Blender's Euler XYZ
    np.testing.assert_allclose(euler_to_quaternion(np.array([0.0, 0.0, 1.0])), quat_about_z(1.0), atol=1e-12)


def model_with(animations, **overrides):
    spec = character_spec(animations=animations, **overrides)
    return read_mdl_bytes(write_mdl(spec), "anim.mdl"), spec


def test_raw_rotation_and_position_are_absolute():
    q = quat_about_z(0.5)
    mdl, _ = model_with([SAnimation("raw", 3, [SNode(1, ("q64", q), ("v48", (1.0, 2.0, 3.0)))])])
    anim = decode_animation(mdl, 0)
    assert anim.rotations.shape == (3, 2, 4) and anim.animated.tolist() == [False, True]
    np.testing.assert_allclose(anim.rotations[:, 1], [q] * 3, atol=1e-6)
    np.testing.assert_allclose(anim.positions[:, 1], [(1, 2, 3)] * 3)
    np.testing.assert_allclose(anim.positions[:, 0], [(0, 0, 1)] * 3)  # no node: the bind pose
    np.testing.assert_allclose(anim.rotations[:, 0], [(1, 0, 0, 0)] * 3)


def test_rle_streams_scale_and_add_the_bind_pose():
    # spine's bind pose: pos (0,0,1), 90° about Z (rot (0,0,pi/2)); rotscale 1/1024, posscale 1/64
    z_turn = [0, 512, 1024, 1024, 1024]  # + bind: 90°, 90+28.6°, ... (radians: value / 1024)
    lift = [0, 64, 128, 128, 128]  # + bind z: 1, 2, 3, 3, 3
    rot = ("rle", [[0] * 5, [0] * 5, z_turn])
    pos = ("rle", [[0] * 5, [0] * 5, lift])
    mdl, _ = model_with([SAnimation("rle", 5, [SNode(1, rot, pos)])])
    anim = decode_animation(mdl, 0)
    expected_angles = np.array([[0, 0, math.pi / 2 + v / 1024] for v in z_turn])
    np.testing.assert_allclose(anim.rotations[:, 1], euler_to_quaternion(expected_angles), atol=1e-6)
    np.testing.assert_allclose(anim.positions[:, 1, 2], [1 + v / 64 for v in lift], atol=1e-6)


def test_delta_animations_are_relative_and_missing_bones_are_identity():
    mdl, _ = model_with(
        [SAnimation("delta", 2, [SNode(1, ("rle", [[0, 0], [0, 0], [0, 1024]]), None, delta=True)], delta=True)]
    )
    anim = decode_animation(mdl, 0)
    assert anim.delta
    np.testing.assert_allclose(anim.rotations[:, 0], [(1, 0, 0, 0)] * 2)  # no node in a delta: identity
    np.testing.assert_allclose(anim.positions[:, 0], 0)
    np.testing.assert_allclose(anim.rotations[1, 1], euler_to_quaternion(np.array([0, 0, 1.0])), atol=1e-6)
    np.testing.assert_allclose(anim.positions[:, 1], 0)  # delta node without position: zero, not the bind pose


@pytest.mark.parametrize("frames, section_frames", [(10, 4), (9, 3), (8, 30)])
def test_sections_including_the_last_frame(frames, section_frames):
    ramp = [[0] * frames, [0] * frames, [k * 10 for k in range(frames)]]
    mdl, _ = model_with([SAnimation("long", frames, [SNode(0, None, ("rle", ramp))], section_frames=section_frames)])
    anim = decode_animation(mdl, 0)
    np.testing.assert_allclose(anim.positions[:, 0, 2], [1 + k * 10 / 64 for k in range(frames)], atol=1e-6)


def test_rle_runs_repeat_their_last_value():
    held = [0, 5, 5, 5, 5, 5, 9]  # the writer leaves repeated values to the run's total
    mdl, _ = model_with([SAnimation("hold", 7, [SNode(0, None, ("rle", [[0] * 7, [0] * 7, held]))])])
    np.testing.assert_allclose(decode_animation(mdl, 0).positions[:, 0, 2], [1 + v / 64 for v in held], atol=1e-9)


# --- real files ------------------------------------------------------------------------------------------------


def decode_all(relative: str | Path):
    path = relative if isinstance(relative, Path) else samples_dir() / "source" / relative
    mdl = read_mdl(path)
    ani_path = find_ani(str(path), mdl.anim_block_name) if mdl.num_anim_blocks > 1 else None
    ani = open(ani_path, "rb").read() if ani_path else None  # noqa: SIM115 - read whole, closed at once
    return mdl, [decode_animation(mdl, i, ani, ani_path) for i in range(len(mdl.animations))]


def test_ani_blocks_decode():
    mdl, anims = decode_all("bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl")
    assert len(anims) == 97 and mdl.num_anim_blocks == 9
    assert sum(a.delta for a in anims) > 0
    moving = [a for a in anims if len(a.rotations) > 1]
    assert moving and all(np.isfinite(a.rotations).all() and np.isfinite(a.positions).all() for a in anims)
    norms = np.concatenate([np.linalg.norm(a.rotations, axis=-1).ravel() for a in anims])
    np.testing.assert_allclose(norms, 1.0, atol=1e-4)


@pytest.mark.parametrize(
    "relative",
    [
        "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl",
        "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl",
    ],
)
def test_curves_are_continuous_across_section_boundaries(relative):
    mdl, anims = decode_all(relative)
    checked = 0
    for desc, anim in zip(mdl.animations, anims, strict=True):
        if not desc.section_frames or len(anim.positions) <= desc.section_frames:
            continue
        x = np.concatenate(
            [anim.positions.reshape(len(anim.positions), -1), 10 * anim.rotations.reshape(len(anim.rotations), -1)],
            axis=1,
        )
        curvature = np.abs(x[2:] - 2 * x[1:-1] + x[:-2]).max(axis=1)  # at frames 1..n-2
        sf = desc.section_frames
        at_boundary = sorted({k for b in range(sf, len(x) - 1, sf) for k in (b - 2, b - 1) if 0 <= k < len(curvature)})
        elsewhere = np.delete(curvature, at_boundary)
        # A section may store a constant value as a raw float16 Vector48 where the next one used a finer RLE
        # scale (ghostanim's c6m3_outro: -2815.33 then -2814.0, the float16 step at that size), so one half-float
        # quantum at the curve's magnitude is allowed; a decoding seam would be far larger.
        quantum = float(np.abs(x).max()) * 2.0**-10
        assert curvature[at_boundary].max() <= elsewhere.max() + quantum, desc.name
        checked += 1
    assert checked > 0


def test_every_sample_animation_decodes():
    total = 0
    for path in sample_files("source", "*.mdl"):
        _, anims = decode_all(path)
        assert all(np.isfinite(a.rotations).all() and np.isfinite(a.positions).all() for a in anims), path
        total += len(anims)
    # coverage/: cremator 1, the galil's 9 frame-major, the Titanfall 2 generator 1, the Titanfall rock 1
    assert total == 1 + 1 + 11 + 2 + 1 + 1 + 2 + 129 + 97 + 1 + 10 + (1 + 9 + 1 + 1)


def test_bind_pose_helper_matches_rest():
    bones = [SBone("a"), SBone("b", 0, (1, 2, 3), quat_about_z(0.25)[1:] + quat_about_z(0.25)[:1])]
    mdl, _ = model_with([SAnimation("still", 2, [])], bones=bones)
    anim = decode_animation(mdl, 0)
    np.testing.assert_allclose(anim.positions[0, 1], (1, 2, 3))
    np.testing.assert_allclose(anim.rotations[0, 1], quat_about_z(0.25), atol=1e-7)


def test_frame_major_flag_over_node_data_is_reported_not_raised():
    """A node list read as frame-major data (test_frame_animation.py decodes real ones): an error naming the
    byte, one warning in the import, the other animations kept."""
    from io_ms3d_mdl.errors import FormatError
    from io_ms3d_mdl.scene.source.convert import SourceOptions, source_to_scene

    spec = character_spec(animations=[SAnimation("csgo", 2, []), SAnimation("fine", 2, [])])
    data = bytearray(write_mdl(spec))
    mdl = read_mdl_bytes(bytes(data), "anim.mdl")
    flags_at = mdl.animations[0].offset + 12  # mstudioanimdesc_t.flags
    data[flags_at : flags_at + 4] = (0x40).to_bytes(4, "little")  # STUDIO_FRAMEANIM
    mdl = read_mdl_bytes(bytes(data), "anim.mdl")
    with pytest.raises(FormatError, match="frame animation"):
        decode_animation(mdl, 0)
    scene = source_to_scene(mdl, None, None, SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["fine"]
    assert any("animation 'csgo' could not be decoded" in w for w in scene.warnings)
