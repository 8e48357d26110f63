"""The vectorised Source animation decoder against the per-bone decoder it replaced (kept below, verbatim but for
names): the same poses on every shared sample animation, and the same outcome on damaged animation data."""

from __future__ import annotations

import random
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from conftest import samples_dir
from source_writer import SAnimation, SBodyPart, SBone, SModel, SNode, character_spec, quad_mesh, write_mdl

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.binary import Cursor
from io_ms3d_mdl.formats.source import find_ani, read_mdl, read_mdl_bytes
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.animation import (
    ANIMPOS,
    ANIMROT,
    DELTA,
    RAWPOS,
    RAWROT,
    RAWROT2,
    STUDIO_FRAMEANIM,
    SkippedAnimation,
    _data_offset,
    _read_nodes,
    decode_animation,
    decode_animations,
)
from io_ms3d_mdl.formats.source.animation_streams import rle_tracks
from io_ms3d_mdl.formats.source.animation_values import euler_to_quaternion, half_to_float
from io_ms3d_mdl.formats.source.decoded_animation import BONE_FIXED_ALIGNMENT, MAX_FRAMES, DecodedAnimation
from io_ms3d_mdl.formats.source.model import MdlFile

# --- the per-bone decoder as it was before vectorising (the reference) ---------------------------------------------


def legacy_quaternion48(raw: bytes) -> np.ndarray:
    x, y, zw = np.frombuffer(raw, "<u2", 3).astype(np.int64)
    q = np.array([(x - 32768) / 32768.0, (y - 32768) / 32768.0, ((zw & 0x7FFF) - 16384) / 16384.0])
    w = np.sqrt(max(0.0, 1.0 - float(q @ q)))
    return np.array([-w if zw >> 15 else w, *q])


def legacy_quaternion64(raw: bytes) -> np.ndarray:
    bits = int.from_bytes(raw, "little")
    xyz = [((bits >> shift) & 0x1FFFFF) for shift in (0, 21, 42)]
    q = np.array([(c - 1048576) / 1048576.5 for c in xyz])
    w = np.sqrt(max(0.0, 1.0 - float(q @ q)))
    return np.array([-w if bits >> 63 else w, *q])


def legacy_rle_track(cur: Cursor, offset: int, frames: int) -> np.ndarray:
    out = np.zeros(frames, dtype=np.float64)
    frame = 0
    while frame < frames:
        header = cur.array_at(np.dtype("u1"), offset, 2, "animation value run")
        valid, total = int(header[0]), int(header[1])
        if total == 0:
            break
        values = cur.array_at(np.dtype("<i2"), offset + 2, valid, "animation values").astype(np.float64)
        span = min(total, frames - frame)
        if valid:
            take = np.minimum(np.arange(span), valid - 1)
            out[frame : frame + span] = values[take]
        frame += total
        offset += 2 * (valid + 1)
    return out


def legacy_decode_animation(
    mdl: MdlFile, index: int, ani_data: bytes | None = None, ani_path: str | None = None
) -> DecodedAnimation:
    anim = mdl.animations[index]
    if anim.flags & STUDIO_FRAMEANIM:
        raise SkippedAnimation("it uses the frame-major STUDIO_FRAMEANIM layout, which is not decoded yet")
    frames = anim.num_frames
    if not 0 < frames <= MAX_FRAMES:
        raise FormatError(mdl.path, anim.offset, f"animation '{anim.name}' declares {frames} frames")
    bones = mdl.bones
    count = len(bones)
    delta = anim.is_delta
    base_quat = bones["quat"].astype(np.float64)[:, [3, 0, 1, 2]]
    rotations = np.empty((frames, count, 4))
    positions = np.empty((frames, count, 3))
    rotations[:] = (1.0, 0.0, 0.0, 0.0) if delta else base_quat
    positions[:] = 0.0 if delta else bones["pos"].astype(np.float64)
    animated = np.zeros(count, dtype=bool)
    mdl_cur = Cursor(mdl.data, mdl.path)
    ani = Cursor(ani_data, ani_path) if ani_data is not None else None
    if anim.section_frames > 0:
        sf = anim.section_frames
        spans = [(s, s * sf, min(sf, frames - s * sf)) for s in range((frames + sf - 1) // sf)]
        if frames > sf:
            spans = [(s, start, n if start + n < frames else n - 1) for s, start, n in spans]
            spans.append((frames // sf + 1, frames - 1, 1))
    else:
        spans = [(0, 0, frames)]
    for section, start, length in spans:
        if length <= 0:
            continue
        cur, offset = _data_offset(anim, section, mdl_cur, ani, mdl)
        _legacy_nodes(cur, offset, start, length, bones, delta, rotations, positions, animated, anim.name)
    return DecodedAnimation(anim.name, anim.fps if anim.fps > 0 else 30.0, delta, rotations, positions, animated)


def _legacy_tracks(cur: Cursor, pointer: int, length: int, scale: np.ndarray, what: str) -> np.ndarray:
    offsets = cur.array_at(np.dtype("<i2"), pointer, 3, f"{what} value offsets")
    values = np.zeros((length, 3))
    for axis in range(3):
        if int(offsets[axis]) > 0:
            values[:, axis] = legacy_rle_track(cur, pointer + int(offsets[axis]), length) * float(scale[axis])
    return values


def _legacy_nodes(
    cur: Cursor,
    offset: int,
    start: int,
    length: int,
    bones: np.ndarray,
    delta: bool,
    rotations: np.ndarray,
    positions: np.ndarray,
    animated: np.ndarray,
    name: str,
) -> None:
    seen = 0
    frames = slice(start, start + length)
    while True:
        (node,) = cur.array_at(S.ANIM_NODE, offset, 1, f"node of animation '{name}'")
        bone, flags, step = int(node["bone"]), int(node["flags"]), int(node["nextoffset"])
        if bone == 255:
            break
        if bone >= len(bones):
            raise FormatError(cur.path, offset, f"animation '{name}' animates bone {bone} of {len(bones)}")
        animated[bone] = True
        node_delta = bool(flags & DELTA)
        payload = offset + 4
        b = bones[bone]
        if flags & RAWROT:
            q = np.broadcast_to(legacy_quaternion48(cur.bytes_at(payload, 6, "Quaternion48")), (length, 4))
            payload += 6
        elif flags & RAWROT2:
            q = np.broadcast_to(legacy_quaternion64(cur.bytes_at(payload, 8, "Quaternion64")), (length, 4))
            payload += 8
        elif flags & ANIMROT:
            angles = _legacy_tracks(cur, payload, length, b["rotscale"], "rotation")
            if not node_delta:
                angles += b["rot"].astype(np.float64)
            q = euler_to_quaternion(angles)
            payload += 6
        else:
            q = np.broadcast_to(
                (1.0, 0.0, 0.0, 0.0) if node_delta else b["quat"].astype(np.float64)[[3, 0, 1, 2]], (length, 4)
            )
        if int(b["flags"]) & BONE_FIXED_ALIGNMENT and not node_delta:
            align = b["qalignment"].astype(np.float64)[[3, 0, 1, 2]]
            q = np.where((q @ align)[:, None] < 0, -q, q)
        rotations[frames, bone] = q
        if flags & RAWPOS:
            positions[frames, bone] = half_to_float(np.frombuffer(cur.bytes_at(payload, 6, "Vector48"), "<u2"))
        elif flags & ANIMPOS:
            pos = _legacy_tracks(cur, payload, length, b["posscale"], "position")
            positions[frames, bone] = pos if node_delta else pos + b["pos"].astype(np.float64)
        else:
            positions[frames, bone] = 0.0 if node_delta else b["pos"].astype(np.float64)
        seen += 1
        if step == 0 or seen > len(bones):
            break
        offset += step


# --- comparisons ----------------------------------------------------------------------------------------------------


def outcome(
    decode: Callable[..., DecodedAnimation], mdl: MdlFile, index: int, ani: tuple[bytes, str] | None
) -> DecodedAnimation | type[Exception]:
    """The decoded animation, or the kind of error it ended with (messages may name another byte)."""
    try:
        return decode(mdl, index, *(ani or (None, None)))
    except (FormatError, SkippedAnimation) as exc:
        return type(exc)


def assert_same(new: DecodedAnimation | type[Exception], old: DecodedAnimation | type[Exception], label: str) -> None:
    if isinstance(old, type) or isinstance(new, type):
        assert new == old, label
        return
    assert (new.name, new.fps, new.delta) == (old.name, old.fps, old.delta), label
    assert new.animated.tolist() == old.animated.tolist(), label
    np.testing.assert_allclose(new.rotations, old.rotations, rtol=0, atol=1e-9, err_msg=label)
    np.testing.assert_allclose(new.positions, old.positions, rtol=0, atol=1e-9, err_msg=label)


def sample_models() -> list[Path]:
    return sorted((samples_dir() / "source").rglob("*.mdl"))


def load(path: Path) -> tuple[MdlFile, tuple[bytes, str] | None]:
    mdl = read_mdl(path)
    ani_path = find_ani(str(path), mdl.anim_block_name) if mdl.num_anim_blocks > 1 else None
    ani = (open(ani_path, "rb").read(), ani_path) if ani_path else None  # noqa: SIM115 - read whole, closed at once
    return mdl, ani


def test_every_sample_animation_decodes_as_before():
    compared = 0
    for path in sample_models():
        mdl, ani = load(path)
        for i in range(len(mdl.animations)):
            new, old = outcome(decode_animation, mdl, i, ani), outcome(legacy_decode_animation, mdl, i, ani)
            assert_same(new, old, f"{path.name}: {mdl.animations[i].name}")
            compared += 1
    assert compared == 1 + 1 + 11 + 2 + 1 + 1 + 2 + 129 + 97 + 1 + 10  # every animation of the corpus


def joint_outcomes(mdl: MdlFile, ani: tuple[bytes, str] | None) -> list[DecodedAnimation | type[Exception]]:
    results = decode_animations(mdl, list(range(len(mdl.animations))), *(ani or (None, None)))
    return [type(r) if isinstance(r, Exception) else r for r in results]


def test_every_sample_animation_decodes_together_as_alone():
    """All of a model's animations in one joint decode: each the same as the reference decoder gives it alone."""
    for path in sample_models():
        mdl, ani = load(path)
        for i, new in enumerate(joint_outcomes(mdl, ani)):
            assert_same(new, outcome(legacy_decode_animation, mdl, i, ani), f"{path.name}: {mdl.animations[i].name}")


@pytest.mark.parametrize(
    "relative, cases",
    [
        ("siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl", 60),
        ("Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl", 60),
        ("bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl", 60),
    ],
)
def test_damaged_animation_data_ends_the_same_way(relative, cases):
    """Bit flips, 16-bit extremes and copied blocks in one animation's data (MDL or .ani): the same poses, or the
    same kind of error, from both decoders."""
    path = samples_dir() / "source" / relative
    mdl, ani = load(path)
    rng = random.Random(relative)
    kinds = set()
    for case in range(cases):
        i = rng.randrange(len(mdl.animations))
        damaged_mdl, damaged_ani = damage_animation(mdl, ani, i, rng)
        new = outcome(decode_animation, damaged_mdl, i, damaged_ani)
        assert_same(new, outcome(legacy_decode_animation, damaged_mdl, i, damaged_ani), f"case {case}, animation {i}")
        kinds.add(new if isinstance(new, type) else DecodedAnimation)
        if case % 6 == 0:  # decoded with all the others, each ends as it does alone
            for j, joint in enumerate(joint_outcomes(damaged_mdl, damaged_ani)):
                alone = new if j == i else outcome(decode_animation, damaged_mdl, j, damaged_ani)
                assert_same(joint, alone, f"case {case}, animation {j} of all")
    assert DecodedAnimation in kinds and FormatError in kinds  # both endings were compared


def damage_animation(
    mdl: MdlFile, ani: tuple[bytes, str] | None, index: int, rng: random.Random
) -> tuple[MdlFile, tuple[bytes, str] | None]:
    """The model and .ani with a few corrupted bytes in the first 600 of animation ``index``'s first section."""
    ani_cur = Cursor(ani[0], ani[1]) if ani else None
    try:
        cur, start = _data_offset(mdl.animations[index], 0, Cursor(mdl.data, mdl.path), ani_cur, mdl)
    except (FormatError, SkippedAnimation):
        return mdl, ani
    out = bytearray(cur.data)
    end = min(len(out) - 2, start + 600)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(start, end)
        kind = rng.randrange(3)
        if kind == 0:
            out[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            out[i : i + 2] = rng.choice([b"\xff\xff", b"\x00\x80", b"\xff\x7f", b"\x00\x00", b"\x01\x00"])
        else:
            j = rng.randrange(start, end)
            out[i : i + 16] = out[j : j + 16]
    out = bytes(out[: len(cur.data)])
    if cur is ani_cur:
        return mdl, (out, ani[1])
    try:
        return read_mdl_bytes(out, mdl.path), ani
    except FormatError:  # the bytes also belong to a table the reader checks: compare the intact model
        return mdl, ani


def test_duplicate_nodes_and_raw_kinds_match(tmp_path):
    """A bone named twice keeps its last node; raw Quaternion48/64 and Vector48 beside RLE streams, in a delta."""
    turn = ("rle", [[0, 100, 200, 200], [0] * 4, [5, -5, 300, 0]])
    bones = [SBone("a"), SBone("b", 0, (1, 2, 3))]
    for delta in (False, True):
        nodes = [
            SNode(1, ("q48", (0.6, 0.0, 0.8, 0.0)), ("v48", (1.0, -2.0, 0.5)), delta=delta),
            SNode(0, ("q64", (0.0, 0.6, 0.0, 0.8)), turn, delta=delta),
            SNode(1, turn, ("rle", [[1, 2, 3, 4], [0] * 4, [9] * 4]), delta=delta),
        ]
        spec = character_spec(animations=[SAnimation("mixed", 4, nodes, delta=delta)], bones=bones)
        mdl = read_mdl_bytes(write_mdl(spec), "mixed.mdl")
        assert_same(decode_animation(mdl, 0), legacy_decode_animation(mdl, 0), f"delta={delta}")


def test_all_streams_at_once_equal_one_at_a_time():
    """Streams of several runs, held values and a corrupt zero-length run, decoded together and one by one."""
    raw = bytearray()
    starts = []
    for runs in ([(3, 3, [1, 2, 3])], [(1, 4, [7]), (2, 2, [-1, -2])], [(2, 2, [5, 6]), (0, 0, [])], [(0, 5, [])]):
        starts.append(len(raw))
        for valid, total, values in runs:
            raw += bytes([valid, total]) + np.array(values, "<i2").tobytes()
    cur = Cursor(bytes(raw) + bytes(8))
    together = rle_tracks(cur, np.array(starts), 6)
    for start, row in zip(starts, together, strict=True):
        np.testing.assert_array_equal(row, legacy_rle_track(cur, start, 6))
    assert together[1].tolist() == [7, 7, 7, 7, -1, -2]


def test_a_long_damaged_section_reports_the_damage_the_sdk_meets_first():
    """A section of 70,000 node-frames whose first node (a raw Quaternion48) runs past the end and whose last has a
    broken stream: decoded alone, in the SDK's order, both decoders name the same damage."""
    frames = 10_000

    def track(k: int) -> tuple:
        return (
            "rle",
            [[(i // 255 + k) % 500 for i in range(frames)], [k] * frames, [(i // 255) * 3 for i in range(frames)]],
        )

    bones = [SBone(f"b{i}", i - 1, (0, 0, 1)) for i in range(7)]
    animations = [
        SAnimation("ok", 5, [SNode(1, track(1), None)]),
        SAnimation("big", frames, [SNode(b, track(b), None) for b in range(7)]),
    ]
    spec = character_spec(bones=bones, includes=[], animations=animations)
    spec.body_parts, spec.skins, spec.attachments = (
        [SBodyPart("body", [SModel("m", [quad_mesh(0, 0.0, 0)])])],
        [[0]],
        [],
    )
    data = bytearray(write_mdl(spec))
    big = read_mdl_bytes(bytes(data), "guy.mdl").animations[1]
    first = big.offset + big.anim_index
    _, _, pointers = _read_nodes(Cursor(bytes(data), "guy.mdl"), first, 7, "big")
    struct.pack_into("<h", data, int(pointers[6]), 32767)  # the last node's first stream: far past the end
    end = len(data)
    data += struct.pack("<BBh", 0, RAWROT, first - end)  # a new first node: a raw rotation at the very end
    struct.pack_into("<i", data, big.offset + S.ANIMDESC.fields["animindex"][1], end - big.offset)
    mdl = read_mdl_bytes(bytes(data), "guy.mdl")
    messages = []
    for decode in (decode_animation, legacy_decode_animation):
        with pytest.raises(FormatError) as caught:
            decode(mdl, 1)
        messages.append(str(caught.value))
    assert messages[0] == messages[1] and "Quaternion48" in messages[0]
    (ok, damaged) = decode_animations(mdl, [0, 1])
    assert isinstance(ok, DecodedAnimation) and str(damaged) == messages[0]
