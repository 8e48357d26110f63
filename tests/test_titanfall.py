"""Titanfall models: v52 (44–49 records, ``.dx11.vtx``, ``.vvc`` colours) and v53 (its own header, bones,
textures and animation descriptors, with the sidecars embedded in the ``.mdl``, and Respawn's per-bone animation
headers with scale channels). Written fixtures must assemble exactly like their v48 twins, v53 animations must
decode to exactly what was written; the real samples are checked against values read here from their raw bytes."""

from __future__ import annotations

import json
import struct
import time

import numpy as np
import pytest
from conftest import bpy, samples_dir
from source_writer import (
    SAnimation,
    SBodyPart,
    SBone,
    SModel,
    SNode,
    character_spec,
    quad_mesh,
    second_uvs_of,
    vertex_colors_of,
    write_mdl,
    write_source,
)

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.source import read_mdl, read_mdl_bytes
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.formats.source.mdl import embedded_bytes
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

V52 = "coverage/source/r1delta__CORE/models/rocks/single_rock_01.mdl"
V53 = "coverage/source/Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl"
WALK = SAnimation("walk", 5, [SNode(1, ("rle", [[0] * 5, [0] * 5, [0, 100, 200, 300, 400]]), ("v48", (1, 2, 3)))])


def spec_of(version: int, **overrides):
    return character_spec(version=version, animations=[WALK], vertex_colors=True, **overrides)


def meshes(scene) -> dict[str, tuple]:
    return {o.name: (o.mesh.positions, o.mesh.triangles, o.mesh.uvs, o.skin and o.skin.weights) for o in scene.objects}


def tree(collections) -> list:
    """Body parts and their options: names, the objects in them and which are hidden."""
    return [(c.name, c.objects, c.hidden, tree(c.children)) for c in collections]


def same_meshes(a, b) -> None:
    ma, mb = meshes(a), meshes(b)
    assert ma.keys() == mb.keys() and ma
    for name in ma:
        for x, y in zip(ma[name], mb[name], strict=True):
            np.testing.assert_array_equal(x, y)


def test_v52_fixture_assembles_like_v48_with_dx11_vtx_and_vvc(tmp_path):
    options = SourceOptions(animations="ALL")
    twin = load_source(str(write_source(spec_of(48), tmp_path / "v48", "guy")), options)
    path = write_source(spec_of(52), tmp_path / "v52", "guy", vtx_suffix=".dx11.vtx")
    scene = load_source(str(path), options)
    same_meshes(scene, twin)
    assert [b.name for b in scene.skeleton.bones] == ["pelvis", "spine"]
    assert tree(scene.collections) == tree(twin.collections) and "hat" in str(tree(scene.collections))
    assert [a.name for a in scene.actions] == [a.name for a in twin.actions] and "walk" in scene.actions[0].name
    assert [m.name for m in scene.materials] == [m.name for m in twin.materials]
    assert not any(".vvc" in w for w in scene.warnings)
    mdl = read_mdl(path)
    assert mdl.version == 52 and mdl.skins.tolist() == [[0, 2], [1, 2]]
    ours, theirs = decode_animation(mdl, 0), decode_animation(read_mdl(tmp_path / "v48" / "guy.mdl"), 0)
    np.testing.assert_array_equal(ours.rotations, theirs.rotations)
    np.testing.assert_allclose(ours.positions[:, 1], [(1, 2, 3)] * 5)


@pytest.mark.parametrize("version", [52, 53])
def test_vvc_colours_and_second_uvs_follow_the_vvd_fixups(tmp_path, version):
    """The .vvc is in the .vvd's disk order: the fixup replay that orders the pool orders its colours and UVs."""
    spec = spec_of(version, shuffle_with_fixups=True)
    scene = load_source(str(write_source(spec, tmp_path, "guy", vtx_suffix=".dx11.vtx")), SourceOptions())
    colours, uvs = vertex_colors_of(spec), second_uvs_of(spec)
    meshes = [o.mesh for o in scene.objects if o.mesh.colors is not None]
    assert meshes and all(m.uvs2 is not None for m in meshes)
    for mesh in meshes:
        np.testing.assert_array_equal(mesh.colors, colours[mesh.source_vertices])
        expected = uvs[mesh.source_vertices][mesh.triangles.ravel()]
        np.testing.assert_allclose(mesh.uvs2, np.c_[expected[:, 0], 1.0 - expected[:, 1]], atol=1e-6)


def test_a_vvc_for_another_vertex_count_is_reported_not_used(tmp_path):
    path = write_source(spec_of(52), tmp_path, "guy", vtx_suffix=".dx11.vtx")
    vvc = bytearray((tmp_path / "guy.vvc").read_bytes())
    struct.pack_into("<i", vvc, 16, 5)  # numLODVertexes[0]
    (tmp_path / "guy.vvc").write_bytes(bytes(vvc))
    scene = load_source(str(path), SourceOptions())
    assert all(o.mesh.colors is None for o in scene.objects)
    assert any("vertex colours of the .vvc" in w and "do not match" in w for w in scene.warnings)


def test_v53_fixture_embeds_its_sidecars_and_assembles_like_v48(tmp_path):
    phy = b"physics data as is"
    path = write_source(spec_of(53, embedded_phy=phy), tmp_path, "guy")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["guy.mdl"]  # nothing beside it
    mdl = read_mdl(path)
    assert mdl.version == 53 and mdl.name == "test/model.mdl"
    assert sorted(mdl.embedded) == ["phy", "vtx", "vvc", "vvd"] and embedded_bytes(mdl, "phy") == phy
    assert embedded_bytes(mdl, "vvd")[:4] == S.VVD_MAGIC and embedded_bytes(mdl, "vvc")[:4] == S.VVC_MAGIC
    assert mdl.textures == ["body", "body_red", "hat"] and mdl.skins.tolist() == [[0, 2], [1, 2]]
    assert mdl.bone_names == ["pelvis", "spine"] and mdl.bones["parent"].tolist() == [-1, 0]
    np.testing.assert_allclose(mdl.bones["quat"][1], (0, 0, 0.7071068, 0.7071068))
    np.testing.assert_allclose(mdl.bones["rotscale"], 1 / 1024)
    options = SourceOptions(animations="ALL")
    twin = load_source(str(write_source(spec_of(48), tmp_path / "v48", "guy")), options)
    scene = load_source(str(path), options)
    same_meshes(scene, twin)
    assert [b.name for b in scene.skeleton.bones] == ["pelvis", "spine"]
    for ours, theirs in zip(scene.skeleton.bones, twin.skeleton.bones, strict=True):
        np.testing.assert_allclose(ours.matrix, theirs.matrix, atol=1e-6)
    assert [m.name for m in scene.materials] == [m.name for m in twin.materials]
    # Respawn's animation headers hold the same motion: the same actions, key for key
    assert [a.name for a in mdl.animations] == ["walk"] and len(scene.actions) == len(twin.actions) == 1
    same_actions(scene.actions[0], twin.actions[0])
    assert [w for w in scene.warnings if "collision" not in w] == twin.warnings  # the embedded .phy is junk


def same_actions(a, b) -> None:
    assert (a.name, a.frame_range, a.additive) == (b.name, b.frame_range, b.additive)
    assert [c.bone for c in a.channels] == [c.bone for c in b.channels]
    for x, y in zip(a.channels, b.channels, strict=True):
        for name in ("rotation_frames", "rotations", "location_frames", "locations"):
            np.testing.assert_allclose(getattr(x, name), getattr(y, name), atol=1e-9, err_msg=name)


def v53_header_field(data: bytes, name: str) -> tuple[int, int]:
    at = S.STUDIOHDR53.fields[name][1]
    return at, struct.unpack_from("<i", data, at)[0]


@pytest.mark.parametrize("bad", [10**6, 5000, 100, -8])
def test_v53_embedded_offsets_outside_the_file_or_in_the_header_are_refused(bad):
    data = bytearray(write_mdl(spec_of(53)))
    at, _ = v53_header_field(data, "vvdindex")
    struct.pack_into("<i", data, at, bad if bad != 5000 else len(data) - 10)
    with pytest.raises(FormatError, match=r"embedded \.vvd data") as caught:
        read_mdl_bytes(bytes(data), "bad.mdl")
    assert caught.value.offset == at and "716-byte header" in caught.value.reason


def test_v53_broken_embedded_data_names_the_model_and_where_it_sits(tmp_path):
    path = write_source(spec_of(53), tmp_path, "guy")
    data = bytearray(path.read_bytes())
    _, vvd = v53_header_field(data, "vvdindex")
    data[vvd : vvd + 4] = b"JUNK"
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError) as caught:
        load_source(str(path))
    assert caught.value.path == f"guy.mdl (.vvd embedded at offset {vvd:,})" and "IDSV" in caught.value.reason


@pytest.mark.parametrize("version", [43, 50, 51, 54, 2530])
def test_versions_outside_the_range_are_refused_by_name(version):
    data = b"IDST" + struct.pack("<i", version) + bytes(800)
    with pytest.raises(FormatError) as caught:
        read_mdl_bytes(data, "x.mdl")
    assert (
        caught.value.reason
        == f"MDL version {version} is not supported; this importer reads 44–49, 52, 53 and 2531 (Bloodlines)"
    )
    assert caught.value.offset == 4


# --- v53 animations: Respawn's bone headers --------------------------------------------------------------------

BONES53 = [
    SBone("pelvis", -1, (0, 0, 1)),
    SBone("spine", 0, (0, 0, 1), (0.0, 0.0, 0.7071068, 0.7071068)),
    SBone("head", 1, (0, 0, 2), (0.258819, 0.0, 0.0, 0.9659258)),  # 30° about X
    SBone("arm", 1, (1, 0, 1), (0.0, 0.3826834, 0.0, 0.9238795)),  # 45° about Y
]
Q_RAW = tuple(np.array([0.8, 0.2, -0.4, 0.4]) / np.linalg.norm([0.8, 0.2, -0.4, 0.4]))  # w, x, y, z


def spec53(animations: list[SAnimation]):
    body = SBodyPart("body", [SModel("body", [quad_mesh(0, float(b), b) for b in range(len(BONES53))])])
    return character_spec(
        version=53, bones=BONES53, body_parts=[body], textures=["body"], skins=[[0]], animations=animations
    )


def streams(frames: int, seed: int) -> list[int]:
    """A stream with runs and repeats (so RLE runs both store and hold values)."""
    values = np.random.default_rng(seed).integers(-900, 900, frames)
    values[1::4] = values[::4][: len(values[1::4])]
    return values.tolist()


def mixed_nodes(frames: int) -> list[SNode]:
    """Every kind of channel: raw, streamed (with an axis that has no stream), constant and absent."""
    return [
        SNode(0, ("q64", Q_RAW), ("v48", (1.5, -2.25, 3.0))),  # raw rotation and position, no scale
        SNode(
            1,
            ("rle", [streams(frames, 1), streams(frames, 2), streams(frames, 3)]),
            ("rle", [streams(frames, 4), None, streams(frames, 5)]),
            scale=("rle", [[0] * frames] * 3),
            posscale=0.125,  # the header's own, not the bone's
        ),
        SNode(2, None, None, scale=("v48", (1.0, 1.0, 1.0))),  # no rotation: the bind pose; no position either
        SNode(3, ("rle", [None, None, streams(frames, 6)]), ("v48", (0.5, 0.25, -4.0))),
    ]


def hamilton(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack(
        [
            aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
        ],
        axis=-1,
    )


def angle_quaternion(angles: np.ndarray) -> np.ndarray:
    """Source's AngleQuaternion: about X, then Y, then Z (q = qz·qy·qx), as (w, x, y, z)."""
    turns = []
    for axis in range(3):
        q = np.zeros((*angles.shape[:-1], 4))
        q[..., 0], q[..., 1 + axis] = np.cos(angles[..., axis] / 2), np.sin(angles[..., axis] / 2)
        turns.append(q)
    return hamilton(hamilton(turns[2], turns[1]), turns[0])


def written_bones(data: bytes) -> dict[str, np.ndarray]:
    """The bind pose and scales as the fixture stored them, read back with struct."""
    _, base = v53_header_field(data, "boneindex")
    out: dict[str, list] = {"pos": [], "quat": [], "rot": [], "rotscale": []}
    for i in range(len(BONES53)):
        at = base + i * 244  # v53 mstudiobone_t
        out["pos"].append(struct.unpack_from("<3f", data, at + 32))
        x, y, z, w = struct.unpack_from("<4f", data, at + 44)
        out["quat"].append((w, x, y, z))
        out["rot"].append(struct.unpack_from("<3f", data, at + 60))
        out["rotscale"].append(struct.unpack_from("<3f", data, at + 96))
    return {k: np.array(v, dtype=np.float64) for k, v in out.items()}


def expected_pose(data: bytes, nodes: list[SNode], frames: int, delta: bool = False) -> tuple[np.ndarray, ...]:
    """Every frame's local rotations and positions from the values written (not from the decoder)."""
    bind = written_bones(data)
    start = (
        (np.tile([1.0, 0, 0, 0], (len(BONES53), 1)), np.zeros((len(BONES53), 3)))
        if delta
        else (bind["quat"], bind["pos"])
    )
    rotations, positions = (np.tile(values, (frames, 1, 1)) for values in start)
    posscale = character_spec().posscale
    for node in nodes:
        b = node.bone
        base_rot = 0.0 if node.delta else bind["rot"][b]
        base_pos = 0.0 if node.delta else bind["pos"][b]
        if node.rot is None:
            rotations[:, b] = (1.0, 0, 0, 0) if node.delta else bind["quat"][b]
        elif node.rot[0] == "q64":
            rotations[:, b] = node.rot[1]
        else:
            axes = np.array([[0] * frames if a is None else a for a in node.rot[1]], dtype=np.float64).T
            rotations[:, b] = angle_quaternion(axes * bind["rotscale"][b] + base_rot)
        if node.pos is None:
            positions[:, b] = base_pos
        elif node.pos[0] == "v48":
            positions[:, b] = np.float16(node.pos[1])
        else:
            axes = np.array([[0] * frames if a is None else a for a in node.pos[1]], dtype=np.float64).T
            positions[:, b] = axes * np.float32(node.posscale or posscale) + base_pos
    return rotations, positions


def assert_same_rotations(got: np.ndarray, expected: np.ndarray, atol: float = 2e-6) -> None:
    """Equal as rotations: q and −q are the same one."""
    off = np.minimum(np.abs(got - expected).max(axis=-1), np.abs(got + expected).max(axis=-1))
    assert off.max() <= atol, off.max()


def section_table(data: bytes, anim) -> list[int]:
    count = (anim.num_frames - 1) // anim.section_frames + 2
    return list(struct.unpack_from(f"<{count}i", data, anim.offset + anim.section_index))


@pytest.mark.parametrize("frames, section_frames", [(1, 0), (7, 0), (5, 10), (25, 10), (30, 10)])
def test_v53_animation_decodes_to_what_was_written(frames, section_frames):
    nodes = mixed_nodes(frames)
    data = write_mdl(spec53([SAnimation("mix", frames, nodes, section_frames=section_frames)]))
    mdl = read_mdl_bytes(data, "mix.mdl")
    (anim,) = mdl.animations
    assert (anim.name, anim.num_frames, anim.section_frames, anim.anim_block) == ("mix", frames, section_frames, 0)
    if frames > section_frames > 0:  # several sections, the last frame alone in the last one
        table = section_table(data, anim)
        assert len(table) == (frames - 1) // section_frames + 2 and len(set(table)) == len(table) and all(table)
    got = decode_animation(mdl, 0)
    rotations, positions = expected_pose(data, nodes, frames)
    assert_same_rotations(got.rotations, rotations)
    np.testing.assert_allclose(got.positions, positions, rtol=0, atol=1e-9)
    assert got.animated.tolist() == [True] * 4 and got.notes == [] and not got.delta and got.fps == 30.0


def test_v53_delta_animation_starts_from_nothing():
    frames = 4
    nodes = [
        SNode(1, ("rle", [streams(4, 7), [0] * 4, streams(4, 8)]), ("rle", [streams(4, 9)] * 3), delta=True),
        SNode(3, ("q64", Q_RAW), ("v48", (0.5, 0.0, 2.0)), scale=("rle", [[0] * 4] * 3), delta=True),
    ]
    data = write_mdl(spec53([SAnimation("lean", frames, nodes, delta=True)]))
    got = decode_animation(read_mdl_bytes(data, "lean.mdl"), 0)
    rotations, positions = expected_pose(data, nodes, frames, delta=True)
    assert got.delta and got.animated.tolist() == [False, True, False, True]
    assert_same_rotations(got.rotations, rotations)
    np.testing.assert_allclose(got.positions, positions, rtol=0, atol=1e-9)
    assert got.notes == []  # a delta's zero scale adds nothing


def test_v53_bones_are_matched_upwards_like_the_game():
    """Titanfall 2 walks the headers while their bone is below the one it wants: a step back or a repeat is
    passed over, whatever it holds."""
    nodes = [
        SNode(2, ("q64", Q_RAW)),
        SNode(1, ("q64", Q_RAW)),  # behind bone 2: never reached
        SNode(3, ("q64", Q_RAW)),
        SNode(3, None, ("v48", (9.0, 9.0, 9.0))),  # a repeat: never reached
    ]
    data = write_mdl(spec53([SAnimation("order", 2, nodes)]))
    got = decode_animation(read_mdl_bytes(data, "order.mdl"), 0)
    rotations, positions = expected_pose(data, [nodes[0], nodes[2]], 2)
    assert got.animated.tolist() == [False, False, True, True]
    assert_same_rotations(got.rotations, rotations)
    np.testing.assert_allclose(got.positions, positions, rtol=0, atol=1e-9)


def test_v53_list_also_ends_at_a_zero_nextoffset():
    nodes = [SNode(0, ("q64", Q_RAW)), SNode(2, ("q64", Q_RAW))]
    data = bytearray(write_mdl(spec53([SAnimation("two", 1, nodes)])))
    (anim,) = read_mdl_bytes(bytes(data), "two.mdl").animations
    first = anim.offset + anim.anim_index
    second = first + struct.unpack_from("<i", data, first + 28)[0]
    end = second + struct.unpack_from("<i", data, second + 28)[0]
    assert data[end + 4] == 255  # the fixture ends its lists as Titanfall 2's files do
    struct.pack_into("<i", data, second + 28, 0)
    data[end + 4] = 3  # no longer the end, and never reached
    got = decode_animation(read_mdl_bytes(bytes(data), "two.mdl"), 0)
    assert got.animated.tolist() == [True, False, True, False]


def test_v53_bone_scale_is_reported_once_and_the_pose_kept(tmp_path):
    grow = [
        SNode(1, None, None, scale=("v48", (2.0, 1.0, 1.0))),
        SNode(2, None, None, scale=("rle", [[0, 512, 1024], None, None])),  # 1 + 1024 × 1/1024 = 2 at frame 2
    ]
    still = [SNode(1, None, None, scale=("rle", [[0, 0, 0]] * 3)), SNode(2, None, None, scale=("v48", (1, 1, 1)))]
    spec = spec53([SAnimation("grow", 3, grow), SAnimation("still", 3, still)])
    path = write_source(spec, tmp_path, "guy")
    mdl = read_mdl(path)
    grown, kept = decode_animation(mdl, 0), decode_animation(mdl, 1)
    assert len(grown.notes) == 1 and "'grow' scales bones (by up to 1 away" in grown.notes[0] and kept.notes == []
    rotations, positions = expected_pose(path.read_bytes(), grow, 3)
    assert_same_rotations(grown.rotations, rotations)
    np.testing.assert_allclose(grown.positions, positions, rtol=0, atol=1e-9)
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["grow", "still"]
    assert [w for w in scene.warnings if "scales bones" in w] == grown.notes


@pytest.mark.parametrize(
    "damage, reason",
    [
        ("bone", "animation 'mix' animates bone 9 of 4"),
        ("next", "the next bone header is 8 bytes on"),
        ("section", "run past the end"),
        ("zero", "data offset 0 points at its own descriptor"),
    ],
)
def test_v53_malformed_animation_data_is_a_format_error_then_a_warning(tmp_path, damage, reason):
    data = bytearray(write_mdl(spec53([SAnimation("mix", 25, mixed_nodes(25), section_frames=10)])))
    (anim,) = read_mdl_bytes(bytes(data), "bad.mdl").animations
    entry = anim.offset + anim.section_index
    first = anim.offset + struct.unpack_from("<i", data, entry)[0]
    if damage == "bone":
        data[first + 4], where = 9, first + 4
    elif damage == "next":
        struct.pack_into("<i", data, first + 28, 8)
        where = first + 28
    elif damage == "section":
        struct.pack_into("<i", data, entry + 4, 10**7)
        where = anim.offset + 10**7
    else:
        struct.pack_into("<i", data, entry + 8, 0)
        where = entry + 8
    with pytest.raises(FormatError) as caught:
        decode_animation(read_mdl_bytes(bytes(data), "bad.mdl"), 0)
    assert caught.value.path == "bad.mdl" and caught.value.offset == where and reason in caught.value.reason
    path = tmp_path / "bad.mdl"
    path.write_bytes(bytes(data))
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert not scene.actions and [w for w in scene.warnings if "animation 'mix'" in w] == [
        f"animation 'mix' could not be decoded: {caught.value.reason} (byte {where})"
    ]


def test_v53_animation_work_is_budgeted():
    from io_ms3d_mdl.budget import Budget, using_budget
    from io_ms3d_mdl.errors import BudgetExceeded

    mdl = read_mdl_bytes(write_mdl(spec53([SAnimation("mix", 30, mixed_nodes(30))])), "mix.mdl")
    with using_budget(Budget(scale=100 / 4_000_000)), pytest.raises(BudgetExceeded, match="frames × bones"):
        decode_animation(mdl, 0)  # 30 frames × 4 bones against a limit of 100


# --- the real samples -------------------------------------------------------------------------------------------


def vtx_triangles(data: bytes, base: int = 0) -> int:
    """Triangles of LOD 0 of every model, walked here with struct (strip groups of 25 or 33 bytes: the later
    Source layout, with topology fields, which Titanfall uses, is told by the group's strip offset)."""
    (num_bp, bp_off) = struct.unpack_from("<ii", data, base + 28)
    total = 0
    for b in range(num_bp):
        bp = base + bp_off + 8 * b
        num_models, m_rel = struct.unpack_from("<ii", data, bp)
        for m in range(num_models):
            model = bp + m_rel + 8 * m
            _, l_rel = struct.unpack_from("<ii", data, model)
            lod = model + l_rel
            num_meshes, me_rel = struct.unpack_from("<ii", data, lod)
            for k in range(num_meshes):
                mesh = lod + me_rel + 9 * k
                num_groups, g_rel = struct.unpack_from("<ii", data, mesh)
                first = struct.unpack_from("<7i", data, mesh + g_rel)
                size = 33 if first[5] % 33 == 0 and num_groups * 33 <= first[5] else 25
                for g in range(num_groups):
                    total += struct.unpack_from("<i", data, mesh + g_rel + size * g + 8)[0] // 3
    return total


def test_real_v52_loads_with_counts_from_its_bytes():
    path = samples_dir() / V52
    assert struct.unpack_from("<4si", path.read_bytes()) == (b"IDST", 52)
    vvd = path.with_suffix(".vvd").read_bytes()
    vertices = struct.unpack_from("<i", vvd, 16)[0]  # numLODVertexes[0]
    triangles = vtx_triangles(path.with_name("single_rock_01.dx11.vtx").read_bytes())
    assert (vertices, triangles) == (119, 198)
    scene = load_source(str(path))
    assert [(len(o.mesh.positions), len(o.mesh.triangles)) for o in scene.objects] == [(vertices, triangles)]
    (material,) = scene.materials
    assert material.name == "single_rocks_01" and material.base_texture.resolved_path.endswith("_col.vtf")
    assert not scene.warnings


def test_real_v53_loads_from_its_embedded_sidecars_with_counts_from_its_bytes():
    path = samples_dir() / V53
    data = path.read_bytes()
    assert struct.unpack_from("<4si", data) == (b"IDST", 53)
    _, vvd = v53_header_field(data, "vvdindex")
    _, vtx = v53_header_field(data, "vtxindex")
    _, phy = v53_header_field(data, "phyindex")
    assert data[vvd : vvd + 4] == b"IDSV"
    vertices = struct.unpack_from("<i", data, vvd + 16)[0]
    triangles = vtx_triangles(data, vtx)
    assert (vertices, triangles) == (24, 12)
    mdl = read_mdl(path)
    assert mdl.embedded["vvd"][0] == vvd and mdl.embedded["vtx"][0] == vtx and mdl.embedded["phy"][0] == phy
    assert "vvc" not in mdl.embedded  # size 0 in this file
    assert mdl.name == "props/generator_coop/generator_coop_blackbox.mdl"
    assert mdl.textures == ["models\\world\\plastic\\plastic_grey"]
    scene = load_source(str(path))
    render = [o for o in scene.objects if "source_phy_solid" not in o.props]
    assert [(len(o.mesh.positions), len(o.mesh.triangles)) for o in render] == [(vertices, triangles)]
    assert any("source_phy_solid" in o.props for o in scene.objects)  # the embedded .phy reached the physics
    assert [m.name for m in scene.materials] == ["plastic_grey"]
    assert not any("not imported" in w or "@ref" in w for w in scene.warnings)


def test_real_v53_reference_animation_is_what_its_bytes_say():
    """generator_coop_blackbox: one 1-frame '@ref' whose bone list is just the end marker (bone 255), so the
    decoded frame is the bind pose; its one sequence plays it."""
    path = samples_dir() / V53
    data = path.read_bytes()
    _, count = v53_header_field(data, "numlocalanim")
    _, desc = v53_header_field(data, "localanimindex")
    name = data[desc + struct.unpack_from("<i", data, desc + 4)[0] :].split(b"\0", 1)[0].decode()
    frames, data_at = struct.unpack_from("<i", data, desc + 16)[0], desc + struct.unpack_from("<i", data, desc + 32)[0]
    assert (count, name, frames, data[data_at + 4]) == (1, "@ref", 1, 255)
    _, bone = v53_header_field(data, "boneindex")
    pos = struct.unpack_from("<3f", data, bone + 32)
    x, y, z, w = struct.unpack_from("<4f", data, bone + 44)
    _, seq = v53_header_field(data, "localseqindex")
    label = data[seq + struct.unpack_from("<i", data, seq + 4)[0] :].split(b"\0", 1)[0].decode()

    mdl = read_mdl(path)
    got = decode_animation(mdl, 0)
    assert got.name == "@ref" and got.fps == 30.0 and not got.delta and not got.animated.any() and not got.notes
    assert got.rotations.tolist() == [[[w, x, y, z]]] and got.positions.tolist() == [[list(pos)]]
    assert [(s.name, s.animations) for s in mdl.sequences] == [(label, [0])] and label == "ref"
    scene = load_source(str(path), SourceOptions(animations="ALL", armature_for_static_props=True))
    assert [a.name for a in scene.animations] == ["@ref"] and [a.name for a in scene.actions] == ["@ref"]
    assert not any("animation" in w for w in scene.warnings)


def test_info_shows_titanfall_versions_and_embedded_parts():
    from test_cli import run

    v52, v53 = samples_dir() / V52, samples_dir() / V53
    text = run("info", v52, v53, block_bpy=True)
    assert text.returncode == 0, text.stderr
    assert "single_rock_01.mdl: Source model version 52" in text.stdout and "game: Titanfall (Respawn)" in text.stdout
    assert "companion files: single_rock_01.vvd, single_rock_01.dx11.vtx (no .phy, .ani)\n" in text.stdout
    assert "generator_coop_blackbox.mdl: Source model version 53" in text.stdout
    assert "embedded in the .mdl: .vtx (445 bytes at offset 3,674), .vvd (1,600 bytes at offset 4,119)" in text.stdout
    report = json.loads(run("info", "--json", v53).stdout)[str(v53)]
    assert report["version"] == 53 and report["embedded"]["phy"] == {"offset": 2216, "size": 718}


def test_decode_time_against_a_v48_model_of_similar_size():
    """Not a benchmark: a guard that the Titanfall paths cost what the v48 path costs (printed for the report)."""
    v48 = samples_dir() / "source/siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl"  # 48 vertices, 3 bones
    if not v48.exists():
        pytest.skip("no v48 reference sample")

    def best(path) -> float:
        load_source(str(path))
        times = []
        for _ in range(5):
            start = time.perf_counter()
            load_source(str(path))
            times.append(time.perf_counter() - start)
        return min(times)

    reference = best(v48)
    for relative in (V52, V53):
        took = best(samples_dir() / relative)
        print(f"{relative}: {took * 1000:.2f} ms, v48 reference {reference * 1000:.2f} ms")
        assert took < max(10 * reference, 0.5)


# --- Blender --------------------------------------------------------------------------------------------------


@pytest.mark.blender
@pytest.mark.parametrize("relative, vertices, material", [(V52, 119, "single_rocks_01"), (V53, 24, "plastic_grey")])
def test_blender_imports_titanfall_models(blender, relative, vertices, material):
    path = samples_dir() / relative
    assert blender.ops.import_scene.source_mdl(filepath=str(path)) == {"FINISHED"}
    (obj,) = [o for o in bpy.data.objects if o.type == "MESH" and "source_phy_solid" not in o]
    assert len(obj.data.vertices) == vertices
    assert [s.material.name for s in obj.material_slots] == [material]


@pytest.mark.blender
def test_blender_poses_a_v53_animation_as_written(blender, tmp_path):
    """Every bone of a synthetic v53 animation (raw, streamed, constant and absent channels, over sections) moves
    the mesh exactly as the written values say: the evaluated vertices equal skinning the written pose."""
    from test_blender_source_anim import assert_meshes_posed, play, reference_pose

    from io_ms3d_mdl.formats.source.animation import DecodedAnimation
    from io_ms3d_mdl.formats.source.sidecars import Sidecars, read_mesh_companions
    from io_ms3d_mdl.scene.source.convert import INCH

    frames, nodes = 12, mixed_nodes(12)
    path = write_source(spec53([SAnimation("mix", frames, nodes, section_frames=5)]), tmp_path, "guy")
    assert blender.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    mdl = read_mdl(path)
    vvd, _, _ = read_mesh_companions(mdl, Sidecars(None, None, None, None))
    rotations, positions = expected_pose(path.read_bytes(), nodes, frames)
    written = DecodedAnimation("mix", 30.0, False, rotations, positions, np.ones(len(BONES53), bool))
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    armature = bpy.data.objects["guy"]
    assert "mix" in bpy.data.actions and bpy.data.actions["mix"]["source_frames"] == frames
    for frame in (0, 3, 5, 11):
        play(bpy, armature, "mix", frame)
        assert_meshes_posed(bpy, scene, reference_pose(mdl, vvd, written, frame, INCH), 1e-5, (frame,))


# --- hostile input ----------------------------------------------------------------------------------------------


def check_embedded(parts: dict[str, bytes]):
    """The v53 path of ``load_source`` on bytes: the model, then the sidecars its header says it holds."""
    from io_ms3d_mdl.formats.source.sidecars import Sidecars, read_mesh_companions
    from io_ms3d_mdl.scene.source.convert import source_to_scene

    mdl = read_mdl_bytes(parts["mdl"], "mutant.mdl")
    vvd, vtx, _ = read_mesh_companions(mdl, Sidecars(None, None, None, None))
    return source_to_scene(mdl, vvd, vtx)


@pytest.mark.parametrize("which", ["fixture v53", "real v53", "real v52"])
def test_titanfall_mutations_only_raise_format_errors(which):
    import random

    from fuzzing import check_source, mutate_case, run_case

    if which == "fixture v53":
        oracle, parts = check_embedded, {"mdl": write_mdl(spec_of(53))}
    elif which == "real v53":
        oracle, parts = check_embedded, {"mdl": (samples_dir() / V53).read_bytes()}
    else:
        path = samples_dir() / V52
        parts = {
            "mdl": path.read_bytes(),
            "vvd": path.with_suffix(".vvd").read_bytes(),
            "vtx": path.with_name("single_rock_01.dx11.vtx").read_bytes(),
        }
        oracle = check_source
    assert run_case(oracle, parts) is None
    rng = random.Random(f"io_ms3d_mdl:titanfall:{which}")
    failures = [(case, out) for case in range(400) if (out := run_case(oracle, mutate_case(parts, rng))) is not None]
    assert failures == []


@pytest.mark.blender
@pytest.mark.parametrize("version", [52, 53])
def test_blender_gets_the_vvc_colours_as_stored_and_the_second_uv_map(blender, tmp_path, version):
    spec = spec_of(version, shuffle_with_fixups=True)
    path = write_source(spec, tmp_path, "guy", vtx_suffix=".dx11.vtx")
    scene = load_source(str(path), SourceOptions())
    assert blender.ops.import_scene.source_mdl(filepath=str(path)) == {"FINISHED"}
    checked = 0
    for data in (o for o in scene.objects if o.mesh.colors is not None):
        mesh = bpy.data.objects[data.name].data
        colours = np.empty(len(mesh.vertices) * 4, np.float32)
        mesh.color_attributes["Color"].data.foreach_get("color_srgb", colours)
        expected = vertex_colors_of(spec)[data.mesh.source_vertices]
        np.testing.assert_array_equal(np.round(colours.reshape(-1, 4) * 255).astype(np.uint8), expected)
        uv2 = np.empty(len(mesh.loops) * 2, np.float32)
        mesh.uv_layers["UVMap2"].data.foreach_get("uv", uv2)
        np.testing.assert_allclose(uv2.reshape(-1, 2), data.mesh.uvs2, atol=1e-6)
        assert mesh.uv_layers.active.name == "UVMap"  # the material's UVs stay the active map
        checked += 1
    assert checked == 2
