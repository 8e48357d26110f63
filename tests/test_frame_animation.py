"""Frame-major (v49 ``STUDIO_FRAMEANIM``) animations: writer-built fixtures of every per-bone flag decode to the
values written; the CS:GO sample's poses equal those a small struct-based decoder in this file reads from the raw
bytes (the engine's sequential walk, bone after bone, independent of the product's vectorised gather)."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import samples_dir
from source_writer import SAnimation, SBodyPart, SBone, SFrameBone, SModel, SNode, SourceSpec, quad_mesh, write_source

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.source import read_mdl
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.formats.source.frame_animation import quaternion48s_words
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

GALIL = "coverage/source/NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped.mdl"
ROT_ATOL = 2e-4  # Quaternion48/48S quantisation (15–16 bits per stored component, the fourth from the norm)


def about(axis: int, angle: float) -> tuple[float, float, float, float]:
    q = [math.cos(angle / 2), 0.0, 0.0, 0.0]
    q[1 + axis] = math.sin(angle / 2)
    return tuple(q)


BONES = [
    SBone(f"b{i}", i - 1, (1.0, 0.5 * i, 0.0), about(i % 3, 0.2 * i)[1:] + about(i % 3, 0.2 * i)[:1]) for i in range(8)
]


def channels(frames: int) -> dict[int, SFrameBone]:
    """Every kind of channel, per bone (0 has none: the bind pose), with values float16/float32 hold exactly."""
    turn = [[about(axis, 0.3 * f + 0.5 * b - 1.0) for f in range(frames)] for b, axis in enumerate([0, 1, 2] * 3)]
    path = [[(b + 0.25 * f, -0.5 * f, 2.0) for f in range(frames)] for b in range(8)]
    return {
        1: SFrameBone(("anim", turn[1]), ("anim", path[1])),
        2: SFrameBone(("anim2", turn[2]), ("full", path[2])),
        3: SFrameBone(("const", about(0, 0.7)), ("const", (3.5, -1.25, 0.125))),
        4: SFrameBone(("const2", about(2, -2.5)), ("const2", (0.1, 0.2, 0.3))),
        5: SFrameBone(("anim2", [(-q[0], -q[1], -q[2], -q[3]) for q in turn[5]])),  # w < 0 kept as stored
        6: SFrameBone(None, ("anim", path[6])),
        # more flags than data: the engine takes the first source they name (ANIMROT over RAWROT over CONST_ROT2,
        # ANIMPOS over RAWPOS over FULLANIMPOS/CONST_POS2) and reads nothing for the others
        7: SFrameBone(("anim", turn[7]), ("anim", path[7]), extra=0x02 | 0x40 | 0x10 | 0x20),
    }


def expected_pose(bone: int, frame: int, frames: int, delta: bool) -> tuple[tuple, tuple]:
    """What the engine makes of bone ``bone`` at ``frame``, from the values ``channels`` wrote."""
    spec = channels(frames)[bone] if bone in channels(frames) else SFrameBone()
    bind_q = (1.0, 0.0, 0.0, 0.0) if delta else BONES[bone].quat[3:] + BONES[bone].quat[:3]
    bind_p = (0.0, 0.0, 0.0) if delta else BONES[bone].pos
    rot = bind_q if spec.rot is None else spec.rot[1][frame] if spec.rot[0].startswith("anim") else spec.rot[1]
    pos = bind_p if spec.pos is None else spec.pos[1][frame] if spec.pos[0] in ("anim", "full") else spec.pos[1]
    return rot, pos


def spec_with(animations: list[SAnimation]) -> SourceSpec:
    return SourceSpec(
        body_parts=[SBodyPart("body", [SModel("m", [quad_mesh()])])], bones=BONES, version=49, animations=animations
    )


def decode_written(tmp_path: Path, animations: list[SAnimation]):
    path = write_source(spec_with(animations), tmp_path, "frames")
    mdl = read_mdl(path)
    ani_path = tmp_path / "frames.ani"
    ani = ani_path.read_bytes() if ani_path.exists() else None
    return mdl, [decode_animation(mdl, i, ani, str(ani_path) if ani else None) for i in range(len(animations))]


@pytest.mark.parametrize("in_ani", [False, True], ids=["mdl", "ani"])
@pytest.mark.parametrize("delta", [False, True], ids=["absolute", "delta"])
@pytest.mark.parametrize("frames, section_frames", [(7, 0), (11, 3), (11, 5), (9, 3), (4, 30), (1, 0)])
def test_every_flag_decodes_to_the_values_written(tmp_path, in_ani, delta, frames, section_frames):
    anim = SAnimation("moves", frames, [], delta=delta, section_frames=section_frames, in_ani=in_ani)
    anim.frame_bones = channels(frames)
    mdl, (decoded,) = decode_written(tmp_path, [anim])
    assert mdl.animations[0].flags & 0x40 and (mdl.animations[0].anim_block == int(in_ani) or section_frames)
    assert decoded.delta == delta and decoded.rotations.shape == (frames, 8, 4)
    assert decoded.animated.tolist() == [False] + [True] * 7
    for frame in range(frames):
        for bone in range(8):
            rot, pos = expected_pose(bone, frame, frames, delta)
            np.testing.assert_allclose(decoded.rotations[frame, bone], rot, atol=ROT_ATOL, err_msg=f"{frame} {bone}")
            np.testing.assert_allclose(decoded.positions[frame, bone], pos, rtol=1e-7, err_msg=f"{frame} {bone}")


def test_quaternion48s_recreates_each_largest_component_with_its_sign():
    from source_writer import encode_q48s

    for q in [about(0, 2.9), about(1, -2.0), about(2, 1.0), (0.1, 0.2, -0.9, 0.37), (-0.95, 0.1, 0.2, 0.2)]:
        q = np.array(q) / np.linalg.norm(q)
        words = np.frombuffer(encode_q48s(tuple(q)), "<u2")[None]
        np.testing.assert_allclose(quaternion48s_words(words)[0], q, atol=1e-4)


def test_node_animations_in_the_ani_decode_like_those_in_the_mdl(tmp_path):
    ramp = ("rle", [[0] * 9, [0] * 9, [10 * k for k in range(9)]])
    nodes = [SNode(2, ("q64", about(1, 0.5)), ramp)]
    here = SAnimation("here", 9, nodes, section_frames=4)
    there = SAnimation("there", 9, nodes, section_frames=4, in_ani=True)
    _, (a, b) = decode_written(tmp_path, [here, there])
    np.testing.assert_array_equal(a.rotations, b.rotations)
    np.testing.assert_array_equal(a.positions, b.positions)


def test_frame_animations_become_actions(tmp_path):
    anims = [SAnimation(f"take{i}", 6, [], section_frames=4 * i, in_ani=bool(i % 2)) for i in range(3)]
    for anim in anims:
        anim.frame_bones = channels(6)
    path = write_source(spec_with(anims), tmp_path, "frames")
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["take0", "take1", "take2"]
    assert not [w for w in scene.warnings if "animation" in w]


# --- damaged data -----------------------------------------------------------------------------------------------


def test_damaged_frame_data_is_a_format_error_naming_file_and_offset(tmp_path):
    anim = SAnimation("moves", 11, [], section_frames=5, in_ani=True)
    anim.frame_bones = channels(11)
    path = write_source(spec_with([anim]), tmp_path, "frames")
    mdl, ani_path = read_mdl(path), tmp_path / "frames.ani"
    ani = ani_path.read_bytes()
    section = struct.unpack_from("<ii", mdl.data, mdl.animations[0].offset + mdl.animations[0].section_index)
    start = int(mdl.anim_blocks[1][0]) + section[1]  # the first section's mstudio_frame_anim_t
    _, frames_at, length = struct.unpack_from("<3i", ani, start)

    def patched(at: int, value: int) -> bytes:
        data = bytearray(ani)
        struct.pack_into("<i", data, at, value)
        return bytes(data)

    cases = {
        "truncated": ani[: start + frames_at + 2 * length],  # the frames run past the end of the file
        "short frames": patched(start + 8, length - 6),  # framelength too small for the flags
        "frames far away": patched(start + 4, 1 << 30),
        "constants before the file": patched(start, -start - 100),
        "header past the end": ani[: start + 10],
    }
    for label, data in cases.items():
        with pytest.raises(FormatError) as caught:
            decode_animation(mdl, 0, data, str(ani_path))
        assert caught.value.path == str(ani_path) and caught.value.offset is not None, label
        assert "frames.ani" in str(caught.value) and "byte offset" in str(caught.value), label
    # through the import: a warning naming the animation and the byte, the model still loads
    ani_path.write_bytes(cases["truncated"])
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert not scene.actions
    assert any("animation 'moves' could not be decoded" in w and "byte" in w for w in scene.warnings)


# --- the CS:GO sample, against an independent reading of its bytes ---------------------------------------------------


def half(word: int) -> float:
    return struct.unpack("<e", struct.pack("<H", word))[0]


def q48(raw: bytes) -> tuple:
    x, y, zw = struct.unpack("<3H", raw)
    xyz = [(x - 32768) / 32768, (y - 32768) / 32768, ((zw & 0x7FFF) - 16384) / 16384]
    w = math.sqrt(max(0.0, 1 - sum(c * c for c in xyz)))
    return (-w if zw & 0x8000 else w, *xyz)


def q48s(raw: bytes) -> tuple:
    a, b, c = struct.unpack("<3H", raw)
    first = (a >> 15) * 2 + (b >> 15)
    out = [0.0] * 4  # x, y, z, w
    for k, word in enumerate((a, b, c)):
        out[(first + k) % 4] = ((word & 0x7FFF) - 16384) / 23168
    last = math.sqrt(max(0.0, 1 - sum(v * v for v in out)))
    out[(first + 3) % 4] = -last if c & 0x8000 else last
    return (out[3], out[0], out[1], out[2])


def raw_pose(mdl_bytes: bytes, ani: bytes, anim: int, frame: int, bone: int) -> tuple[tuple, tuple]:
    """The engine's reading (studio.cpp ``pAnim``, bone_setup.cpp ``ExtractSingleFrame``/``SkipBoneFrame``) of one
    bone at one frame, straight from the bytes; header field offsets from the SDK's studio.h."""
    numbones, boneindex = struct.unpack_from("<ii", mdl_bytes, 156)
    numanim, animindex_table = struct.unpack_from("<ii", mdl_bytes, 180)
    assert anim < numanim
    blocks_at = S.STUDIOHDR.fields["animblockindex"][1]
    blocks = struct.unpack_from("<i", mdl_bytes, blocks_at)[0]
    desc = animindex_table + 100 * anim
    flags, numframes = struct.unpack_from("<ii", mdl_bytes, desc + 12)
    block, index = struct.unpack_from("<ii", mdl_bytes, desc + 52)
    sectionindex, sectionframes = struct.unpack_from("<ii", mdl_bytes, desc + 80)
    local = frame
    if sectionframes:
        if numframes > sectionframes and frame == numframes - 1:
            section, local = numframes // sectionframes + 1, 0
        else:
            section = frame // sectionframes
            local = frame - section * sectionframes
        block, index = struct.unpack_from("<ii", mdl_bytes, desc + sectionindex + 8 * section)
    data, base = (
        (mdl_bytes, desc + index)
        if block == 0
        else (ani, struct.unpack_from("<i", mdl_bytes, blocks + 8 * block)[0] + index)
    )
    constants, frameoffset, framelength = struct.unpack_from("<3i", data, base)
    bone_flags = data[base + 24 : base + 24 + numbones]
    const_at, frame_at = base + constants, base + frameoffset + local * framelength
    rot = pos = None
    for j in range(bone + 1):
        f = bone_flags[j]
        if f & 0x08:
            rot, frame_at = q48(data[frame_at : frame_at + 6]), frame_at + 6
        elif f & 0x80:
            rot, frame_at = q48s(data[frame_at : frame_at + 6]), frame_at + 6
        elif f & 0x02:
            rot, const_at = q48(data[const_at : const_at + 6]), const_at + 6
        elif f & 0x40:
            rot, const_at = q48s(data[const_at : const_at + 6]), const_at + 6
        else:
            rot = None
        if f & 0x04:
            pos, frame_at = tuple(half(w) for w in struct.unpack_from("<3H", data, frame_at)), frame_at + 6
        elif f & 0x01:
            pos, const_at = tuple(half(w) for w in struct.unpack_from("<3H", data, const_at)), const_at + 6
        elif f & 0x10:
            pos, frame_at = struct.unpack_from("<3f", data, frame_at), frame_at + 12
        elif f & 0x20:
            pos, const_at = struct.unpack_from("<3f", data, const_at), const_at + 12
        else:
            pos = None
    record = boneindex + 216 * bone  # mstudiobone_t: pos at 32, quat (x, y, z, w) at 44
    delta = bool(flags & 0x04)
    if rot is None:
        x, y, z, w = struct.unpack_from("<4f", mdl_bytes, record + 44)
        rot = (1.0, 0.0, 0.0, 0.0) if delta else (w, x, y, z)
    if pos is None:
        pos = (0.0, 0.0, 0.0) if delta else struct.unpack_from("<3f", mdl_bytes, record + 32)
    return rot, pos


def galil() -> tuple[Path, bytes, bytes]:
    path = samples_dir() / GALIL
    if not path.exists():
        pytest.skip(f"{GALIL} is not in the sample corpus")
    return path, path.read_bytes(), path.with_suffix(".ani").read_bytes()


# (animation, frames): sectioned ones at and around their section boundaries and their separately stored last frame
PICKS = [
    (0, [0, 1]),
    (1, [0, 29, 30, 31, 59, 60, 87, 88]),
    (2, [0, 29, 30, 32]),
    (5, [0, 23]),
    (7, [0, 10]),
    (8, [0, 30, 60, 90, 119, 120, 137]),
]


def test_the_sample_decodes_like_its_bytes_say():
    path, mdl_bytes, ani = galil()
    mdl = read_mdl(path)
    assert mdl.version == 49 and len(mdl.animations) == 9
    assert all(a.flags & 0x40 and a.anim_block > 0 for a in mdl.animations)  # all frame-major, in the .ani
    decoded = [decode_animation(mdl, i, ani, str(path.with_suffix(".ani"))) for i in range(9)]
    assert [len(a.rotations) for a in decoded] == [a.num_frames for a in mdl.animations]
    checked = 0
    for anim, frames in PICKS:
        for frame in frames:
            for bone in range(len(mdl.bones)):
                rot, pos = raw_pose(mdl_bytes, ani, anim, frame, bone)
                label = f"{mdl.animations[anim].name} frame {frame} bone {bone}"
                np.testing.assert_allclose(decoded[anim].rotations[frame, bone], rot, atol=1e-6, err_msg=label)
                np.testing.assert_allclose(decoded[anim].positions[frame, bone], pos, atol=1e-6, err_msg=label)
                checked += 1
    assert checked > 1000
    norms = np.concatenate([np.linalg.norm(a.rotations, axis=-1).ravel() for a in decoded])
    np.testing.assert_allclose(norms, 1.0, atol=1e-4)


def test_the_sample_curves_are_smooth_across_sections():
    """The step into each section's first frame (and into the separately stored last frame) is like its
    neighbours' (a section read at the wrong place or stride would jump)."""
    path, _, ani = galil()
    mdl = read_mdl(path)
    checked = 0
    for i, desc in enumerate(mdl.animations):
        if not desc.section_frames or desc.num_frames <= desc.section_frames:
            continue
        anim = decode_animation(mdl, i, ani, str(path.with_suffix(".ani")))
        dots = np.abs(np.einsum("fbi,fbi->fb", anim.rotations[1:], anim.rotations[:-1]))
        turn = np.degrees(2 * np.arccos(np.clip(dots, 0, 1))).max(axis=1)  # per step, over all bones
        move = np.abs(np.diff(anim.positions, axis=0)).max(axis=(1, 2))
        last = desc.num_frames - 1
        for boundary in [*range(desc.section_frames, last, desc.section_frames), last]:
            before, into, after = boundary - 2, boundary - 1, min(boundary, last - 1)
            assert turn[into] <= 2 * max(turn[before], turn[after]) + 1.0, (desc.name, boundary)
            assert move[into] <= 2 * max(move[before], move[after]) + 0.1, (desc.name, boundary)
            checked += 1
    assert checked >= 9


def test_the_sample_imports_nine_actions():
    path, _, _ = galil()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert len(scene.actions) == 9
    assert [a.props["source_frames"] for a in scene.actions] == [2, 89, 33, 24, 24, 24, 2, 11, 138]
    assert not [w for w in scene.warnings if "animation" in w]


# --- in Blender -------------------------------------------------------------------------------------------------------


def matrix(rot: tuple, pos: tuple) -> np.ndarray:
    w, x, y, z = rot
    out = np.eye(4)
    out[:3, :3] = [
        [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
        [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
        [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
    ]
    out[:3, 3] = pos
    return out


def raw_world(mdl_bytes: bytes, ani: bytes | None, anim: int | None, frame: int, bone: int) -> np.ndarray:
    """The bone's model-space matrix at ``frame`` of ``anim`` (None: the bind pose), from ``raw_pose``."""
    boneindex = struct.unpack_from("<i", mdl_bytes, 160)[0]
    chain = [bone]
    while (parent := struct.unpack_from("<i", mdl_bytes, boneindex + 216 * chain[-1] + 4)[0]) >= 0:
        chain.append(parent)
    world = np.eye(4)
    for j in reversed(chain):
        if anim is None:
            x, y, z, w = struct.unpack_from("<4f", mdl_bytes, boneindex + 216 * j + 44)
            local = matrix((w, x, y, z), struct.unpack_from("<3f", mdl_bytes, boneindex + 216 * j + 32))
        else:
            local = matrix(*raw_pose(mdl_bytes, ani, anim, frame, j))
        world = world @ local
    return world


@pytest.mark.blender
def test_blender_poses_bones_as_the_bytes_say(blender):
    bpy = blender
    path, mdl_bytes, ani = galil()
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    names = [a.name for a in read_mdl(path).animations]
    assert sorted(a.name for a in bpy.data.actions) == sorted(names) and len(names) == 9
    armature = bpy.data.objects[path.stem]
    bone_names = read_mdl(path).bone_names
    inch, moving = 0.0254, 0
    for anim, frame, bone in [(1, 30, 34), (1, 88, 45), (8, 137, 20), (2, 14, 34)]:
        for track in armature.animation_data.nla_tracks:
            track.mute = track.name != names[anim]
        bpy.context.scene.frame_set(frame)
        posed = armature.evaluated_get(bpy.context.evaluated_depsgraph_get()).pose.bones[bone_names[bone]]
        got = np.array(posed.matrix) @ np.linalg.inv(np.array(armature.data.bones[bone_names[bone]].matrix_local))
        # armature space is model space in metres: the bone's motion from rest, W(t)·W(rest)⁻¹, moves alike
        moved = raw_world(mdl_bytes, ani, anim, frame, bone) @ np.linalg.inv(raw_world(mdl_bytes, None, None, 0, bone))
        label = f"{names[anim]} frame {frame} bone {bone_names[bone]}"
        np.testing.assert_allclose(got[:3, :3], moved[:3, :3], atol=1e-4, err_msg=label)
        np.testing.assert_allclose(got[:3, 3], moved[:3, 3] * inch, atol=1e-5, err_msg=label)
        moving += not np.allclose(moved, np.eye(4), atol=1e-2)
    assert moving >= 3  # the picked bones are really away from their rest pose
