"""Bloodlines (MDL 2531) faces without Blender: flex descriptors, controllers, rules, eyeballs and each mesh's
flexes with their vertex lists, checked against an independent reading written here with ``struct`` from the layout
facts (not the importer's record types), on every model of the Unofficial Patch's repository that has flexes; the
evidence the layouts rest on, counted; and crafted damage to the shared sample giving clean errors.

Layout facts used by the reading below: header counts/offsets of flex descriptors, controllers and rules at 344,
352 and 360, body parts at 320; body parts 16 bytes (model count at 4, offset at 12); models 224 bytes (mesh
count/offset at 136/140, vertex count 144, eyeball count/offset at 192/196); meshes 60 bytes (vertex count 8, flex
count/offset at 16/20); descriptors 4 bytes (name offset); controllers 20 (type, name, local-to-global, min, max);
rules 12 (flex, op count, op offset), ops 8 (op, int or float value); flexes 32 (descriptor, 4 float targets,
vertex count, vertex offset, one int); vertex animations 8 (u16 index, then the delta: a u16 byte offset into a
table of 12-byte directions, the normal's change the same way, a byte of length in 1/32 units, a byte of the normal
change's length); eyeballs 140 (name offset, bone, origin at 8, radius at 24, lid descriptors at 116/120). Offsets
are relative to the record holding them. The table of directions is rebuilt below from its rule (rings of
latitude, ``directions2531``), with plain loops, as the reference the reader's deltas are checked against.
"""

from __future__ import annotations

import math
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from test_source_bloodlines import mirror, shared_model

from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.source import read_mdl_bytes

FEMALE = "character/npc/common/citizen/female3/female_citizen_3.mdl"
CONST, FETCH1, FETCH2 = 1, 2, 3


def _i(data: bytes, at: int, n: int = 1):
    values = struct.unpack_from(f"<{n}i", data, at)
    return values if n > 1 else values[0]


def _model_records(data: bytes):
    """Each model record's offset, with its mesh count and the meshes' offset relative to it (224-byte models
    under 16-byte body parts)."""
    parts, bp_at = _i(data, 320, 2)
    for b in range(parts):
        bp = bp_at + 16 * b
        for m in range(_i(data, bp + 4)):
            mo = bp + _i(data, bp + 12) + 224 * m
            yield (mo, *_i(data, mo + 136, 2))


def _reference_directions() -> np.ndarray:
    """The 5,314 directions: 65 rings from -Z to +Z, 180°/64 apart, ring k holding 4·floor(32·sin θ + 0.9)
    entries (one at each pole), from +X towards +Y."""
    out = []
    for k in range(65):
        theta = k * math.pi / 64
        count = 1 if k in (0, 64) else 4 * math.floor(32 * math.sin(theta) + 0.9)
        for j in range(count):
            turn = 2 * math.pi * j / count
            out.append((math.sin(theta) * math.cos(turn), math.sin(theta) * math.sin(turn), -math.cos(theta)))
    return np.array(out)


DIRECTIONS = _reference_directions()


def reference_deltas(payload: np.ndarray) -> np.ndarray:
    """A flex's position deltas from the 6 bytes after each vertex index."""
    word = payload[:, 0].astype(np.int64) | (payload[:, 1].astype(np.int64) << 8)
    return DIRECTIONS[word // 12] * (payload[:, 4] / 32.0)[:, None]


def _string(data: bytes, at: int) -> str:
    return data[at : data.index(b"\0", at)].decode("latin-1")


@dataclass
class RefFlex:
    desc: int
    targets: tuple[float, ...]
    unknown: int
    start: int  # file offset of its vertex table
    indices: np.ndarray
    payload: np.ndarray  # (N, 6) uint8


@dataclass
class RefMesh:
    vertices: int
    flexes: list[RefFlex] = field(default_factory=list)


@dataclass
class RefFaces:
    names: list[str]
    controllers: list[tuple[str, str, float, float]]
    rules: list[tuple[int, list[tuple[int, float]]]]
    tables: tuple[int, int, int]  # file offsets of the descriptor, controller and rule tables
    meshes: list[RefMesh]
    eyeballs: list[tuple[str, int, tuple[float, ...], float, int, int]]  # name, bone, origin, radius, lids
    eyeball_tables: list[tuple[int, int, int]]  # (count, offset, next table of the model after it)


def faces(data: bytes) -> RefFaces:
    (nd, od), (nc, oc), (nr, orr) = (_i(data, at, 2) for at in (344, 352, 360))
    names = [_string(data, od + 4 * i + _i(data, od + 4 * i)) for i in range(nd)]
    controllers = []
    for i in range(nc):
        at = oc + 20 * i
        kind, name, _, lo, hi = struct.unpack_from("<3i2f", data, at)
        controllers.append((_string(data, at + name), _string(data, at + kind), lo, hi))
    rules = []
    for i in range(nr):
        at = orr + 12 * i
        flex, count, ops_at = _i(data, at, 3)
        ops = []
        for k in range(count):
            op, value = _i(data, at + ops_at + 8 * k, 2)
            ops.append((op, struct.unpack_from("<f", data, at + ops_at + 8 * k + 4)[0] if op == CONST else value))
        rules.append((flex, ops))
    meshes, eyeballs, eyeball_tables = [], [], []
    for mo, num_meshes, mesh_rel in _model_records(data):
        num_eyes, eye_rel = _i(data, mo + 192, 2)
        for e in range(num_eyes):
            at = mo + eye_rel + 140 * e
            name = _i(data, at)
            eyeballs.append(
                (
                    _string(data, at + name) if name else "",
                    _i(data, at + 4),
                    struct.unpack_from("<3f", data, at + 8),
                    struct.unpack_from("<f", data, at + 24)[0],
                    *_i(data, at + 116, 2),
                )
            )
        if num_eyes:
            starts = [mo + v for v in _i(data, mo + 140, 3) if v] + [mo + v for v in _i(data, mo + 200, 6) if v]
            after = [s for s in starts if s > mo + eye_rel]
            eyeball_tables.append((num_eyes, mo + eye_rel, min(after) if after else -1))
        for k in range(num_meshes):
            me = mo + mesh_rel + 60 * k
            mesh = RefMesh(_i(data, me + 8))
            count, flex_rel = _i(data, me + 16, 2)
            for f in range(count):
                at = me + flex_rel + 32 * f
                desc = _i(data, at)
                targets = struct.unpack_from("<4f", data, at + 4)
                nverts, vert_rel, unknown = _i(data, at + 20, 3)
                raw = np.frombuffer(data, np.uint8, 8 * nverts, at + vert_rel).reshape(-1, 8)
                indices = raw[:, 0].astype(np.int64) | (raw[:, 1].astype(np.int64) << 8)
                mesh.flexes.append(RefFlex(desc, targets, unknown, at + vert_rel, indices, raw[:, 2:]))
            meshes.append(mesh)
    return RefFaces(names, controllers, rules, (od, oc, orr), meshes, eyeballs, eyeball_tables)


@pytest.fixture(scope="module")
def flexed() -> dict[str, bytes]:
    """Every model of the fetched repository whose header lists flex descriptors, by path."""
    repo = mirror()
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    out = {}
    for name in names:
        if not name.lower().endswith(".mdl"):
            continue
        # check=False: a few files (large ones) are absent from the snapshot and read as empty
        data = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name}"], capture_output=True, check=False).stdout
        if len(data) >= 424 and data[:4] == b"IDST" and _i(data, 4) == 2531 and _i(data, 344) > 0:
            out[name] = data
    return out


def test_every_flexed_model_reads_as_the_independent_reading(flexed):
    assert len(flexed) == 60  # 59 with a full face (65 descriptors), female_raver_1 with a lone descriptor
    full = 0
    for name, data in flexed.items():
        ref = faces(data)
        mdl = read_mdl_bytes(data, name)
        assert mdl.flex_names == ref.names, name
        assert mdl.flex_controllers == ref.controllers, name
        assert [(r.flex, r.ops) for r in mdl.flex_rules] == ref.rules, name
        ours = [me for bp in mdl.body_parts for mo in bp.models for me in mo.meshes]
        assert len(ours) == len(ref.meshes), name
        for mesh, theirs in zip(ours, ref.meshes, strict=True):
            assert mesh.num_flexes == len(theirs.flexes) == len(mesh.flexes)
            for flex, expected in zip(mesh.flexes, theirs.flexes, strict=True):
                assert (flex.desc, flex.pair) == (expected.desc, 0)
                np.testing.assert_array_equal(flex.targets, np.float32(expected.targets))
                np.testing.assert_array_equal(flex.indices, expected.indices)
                np.testing.assert_allclose(flex.deltas, reference_deltas(expected.payload), atol=1e-6)
        eyes = [e for bp in mdl.body_parts for mo in bp.models for e in mo.eyeballs]
        assert [(e.name, e.bone, tuple(e.origin.tolist()), e.radius) for e in eyes] == [e[:4] for e in ref.eyeballs]
        full += len(ref.names) == 65 and len(ref.controllers) == 44 and len(ref.rules) == 60
    assert full == 59


def test_the_layout_evidence(flexed):
    """What the layouts rest on, counted over every flexed model (the figures structs2531 quotes)."""
    flexes = meshes = neighbours = gapless = unknown_one = eyeball_models = eyeball_next = 0
    lid_names = set()
    for data in flexed.values():
        ref = faces(data)
        nd, nc = len(ref.names), len(ref.controllers)
        od, oc, orr = ref.tables
        if nc:
            assert (oc - od, orr - oc) == (4 * nd, 20 * nc)  # the three tables back to back
        assert all(name for name in ref.names)
        for flex, ops in ref.rules:
            assert 0 <= flex < nd
            for op, value in ops:
                assert op != FETCH1 or 0 <= value < nc
                assert op != FETCH2 or 0 <= value < nd
        for lo_hi in ref.controllers:
            assert lo_hi[2] <= lo_hi[3] and lo_hi[0] and lo_hi[1]
        for mesh in ref.meshes:
            if not mesh.flexes:
                continue
            meshes += 1
            for flex, after in zip(mesh.flexes, [*mesh.flexes[1:], None], strict=True):
                flexes += 1
                unknown_one += flex.unknown == 1
                assert 0 <= flex.desc < nd
                assert np.isfinite(flex.targets).all()
                assert len(flex.indices) and flex.indices.max() < mesh.vertices
                if after is not None:
                    neighbours += 1
                    gapless += after.start == flex.start + 8 * len(flex.indices)
        for count, at, next_table in ref.eyeball_tables:
            eyeball_models += 1
            eyeball_next += next_table == at + 140 * count
        for _name, _bone, _origin, radius, upper, lower in ref.eyeballs:
            assert 0.1 < radius < 2
            lid_names.add((ref.names[upper], ref.names[lower]) if nd > 1 else ("lone", ref.names[0]))
    assert (flexes, meshes, unknown_one) == (5401, 286, 5401)
    assert gapless == neighbours == 5115
    assert (eyeball_next, eyeball_models) == (58, 60)  # the other two: no table of the model follows them
    # female_raver_1's lids name its lone descriptor, "mouth" (index 0: the fields are zero)
    assert lid_names == {("upper_right", "lower_right"), ("upper_left", "lower_left"), ("lone", "mouth")}


def test_the_eyelid_flex_moves_the_eyelid(flexed):
    """The vertices ``upper_right``'s flexes list sit around the right eyeball's centre (radius + lid thickness);
    the shape of its low range (the lowerer) moves them down, that of its high range (the raiser) up."""
    data = next(d for n, d in flexed.items() if n.endswith("/female_citizen_3.mdl"))
    mdl = read_mdl_bytes(data)
    model = mdl.body_parts[0].models[0]
    eye = next(e for e in model.eyeballs if e.origin[2] < 0)  # the right one (bone space)
    rest = np.linalg.inv(np.vstack([mdl.bones["posetobone"][eye.bone], [0, 0, 0, 1]]))
    centre = (rest @ np.r_[eye.origin, 1])[:3]
    positions = mdl.own_vertices.vertices["pos"]
    lids = [(me, f) for me in model.meshes for f in me.flexes if mdl.flex_names[f.desc] == "upper_right"]
    assert len(lids) == 2  # lowered and raised
    for mesh, flex in lids:
        distance = np.linalg.norm(positions[mesh.vertex_offset + flex.indices] - centre, axis=1)
        assert 0.3 < float(np.median(distance)) < 1.0
        down = flex.targets[0] == -11
        assert np.sign(flex.deltas[:, 2].sum()) == (-1 if down else 1)


def test_the_delta_bytes_are_two_table_offsets_and_two_lengths(flexed):
    """Over every flexed model: both 16-bit words of every delta are byte offsets of entries of the 5,314-entry
    table (multiples of 12 below 12·5,314), which is why bits 0–1 of bytes 0 and 2 are always clear."""
    payload = np.concatenate([f.payload for d in flexed.values() for m in faces(d).meshes for f in m.flexes])
    assert len(payload) == 1_009_764
    for at in (0, 2):
        word = payload[:, at].astype(np.int64) | (payload[:, at + 1].astype(np.int64) << 8)
        assert not (word % 12).any() and word.max() < 12 * len(DIRECTIONS)
    assert len(DIRECTIONS) == 5314


def test_the_lowered_lids_drop_by_the_eyelid_height(flexed):
    """The length unit, checked against numbers the compiler wrote elsewhere: an upper lid's lowered shape (its low
    range, targets -11, -10, lowered, neutral) drops the lid by the difference of the two heights it measured for
    the eyeball record. Over the 116 upper lids of the flexed models, the deepest drop of each lowered shape
    matches that difference best with a length unit of 1/32 (better than 1/31 or 1/33), to a median of 0.6 of it."""
    drops, wanted = [], []
    for name, data in flexed.items():
        mdl = read_mdl_bytes(data, name)
        for flex in (f for bp in mdl.body_parts for mo in bp.models for me in mo.meshes for f in me.flexes):
            if mdl.flex_names[flex.desc] in ("upper_right", "upper_left") and flex.targets[0] == -11:
                drops.append(-float(flex.deltas[:, 2].min()) * 32)  # in length units
                wanted.append(float(flex.targets[3] - flex.targets[2]))
    assert len(drops) == 116
    drops, wanted = np.array(drops), np.array(wanted)
    error = {unit: float(np.median(np.abs(drops / unit - wanted))) for unit in (28, 30, 31, 32, 33, 34, 36)}
    assert min(error, key=error.get) == 32
    assert error[32] < 0.6 / 32


def test_the_jaw_flex_turns_the_lower_teeth_rigidly(female):
    """On female_citizen_3's lower teeth, the jaw flex AU27Z's decoded deltas move every vertex within the mirror
    plane (x = 0: the directions' rings are exact there) and the moved teeth are the teeth turned about a sideways
    axis: a rigid fit leaves less than 2% of the motion unexplained (the tables quantise directions by 2.8°)."""
    mdl = read_mdl_bytes(female)
    positions = mdl.own_vertices.vertices["pos"].astype(np.float64)
    mesh = mdl.body_parts[0].models[0].meshes[6]
    (flex,) = mesh.flexes
    assert mdl.flex_names[flex.desc] == "AU27Z" and len(flex.indices) == 27
    assert np.abs(flex.deltas[:, 0]).max() < 1e-6
    before = positions[mesh.vertex_offset + flex.indices][:, 1:]
    after = before + flex.deltas[:, 1:]
    a, b = before - before.mean(0), after - after.mean(0)
    u, _, vt = np.linalg.svd(a.T @ b)
    turn = (u @ vt).T
    residual = np.sqrt(np.mean(np.sum((a @ turn.T - b) ** 2, axis=1)))
    motion = np.sqrt(np.mean(np.sum(flex.deltas**2, axis=1)))
    angle = math.degrees(math.atan2(turn[1, 0], turn[0, 0]))
    assert residual < 0.02 * motion and 15 < abs(angle) < 30


# Crafted damage to the shared sample: the offsets of the first flexed mesh, found with the independent reading.


def _first_flexed_mesh(data: bytes) -> tuple[int, int]:
    """(mesh record offset, first flex record offset)."""
    for mo, num_meshes, mesh_rel in _model_records(data):
        for k in range(num_meshes):
            me = mo + mesh_rel + 60 * k
            if _i(data, me + 16):
                return me, me + _i(data, me + 20)
    raise AssertionError("no flexed mesh")


def _with(data: bytes, at: int, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into("<i", out, at, value)
    return bytes(out)


@pytest.fixture(scope="module")
def female() -> bytes:
    return Path(shared_model(FEMALE)).read_bytes()


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("mesh numflexes", 1 << 28, "flexes over all meshes of 268,435,456 exceeds the work budget"),
        ("mesh numflexes", -3, "declares -3 flexes"),
        ("mesh flexindex", 1 << 30, "run past the end"),
        ("flex desc", 65, "names flex descriptor 65; the model has 65"),
        ("flex numverts", 1 << 27, "run past the end"),
        ("flex vertindex", -(1 << 20), "run past the end"),
        ("header numflexdesc", 1 << 26, "run past the end"),
        ("header flexruleindex", 1 << 30, "run past the end"),
    ],
)
def test_damaged_flex_tables_give_clean_errors(female, field, value, expected):
    mesh, flex = _first_flexed_mesh(female)
    at = {
        "mesh numflexes": mesh + 16,
        "mesh flexindex": mesh + 20,
        "flex desc": flex,
        "flex numverts": flex + 20,
        "flex vertindex": flex + 24,
        "header numflexdesc": 344,
        "header flexruleindex": 364,
    }[field]
    with pytest.raises(FormatError, match=expected) as info:
        read_mdl_bytes(_with(female, at, value), "female_citizen_3.mdl")
    assert "female_citizen_3.mdl" in str(info.value)
    assert info.value.offset is not None


def test_a_flex_moving_a_vertex_past_its_mesh_is_refused(female):
    mesh, flex = _first_flexed_mesh(female)
    table = flex + _i(female, flex + 24)
    out = bytearray(female)
    struct.pack_into("<H", out, table, _i(female, mesh + 8))  # one past the mesh's last vertex
    with pytest.raises(FormatError, match="moves vertex") as info:
        read_mdl_bytes(bytes(out), "female_citizen_3.mdl")
    assert info.value.offset == table


def test_flexes_are_held_to_the_shape_key_budget(female):
    class TenShapeKeys(Budget):
        shape_keys = property(lambda self: 10)

    with using_budget(TenShapeKeys()), pytest.raises(BudgetExceeded, match="flexes over all meshes of 53 "):
        read_mdl_bytes(female, "female_citizen_3.mdl")


def test_flex_lists_out_of_order_read_the_same(female):
    """Swapping a mesh's first two flex records (each keeping its own list: the offsets are relative to the record,
    so they are adjusted by the 32 bytes moved) is read flex by flex and gives the same flexes, swapped."""
    _mesh, flex = _first_flexed_mesh(female)
    out = bytearray(female)
    first, second = bytearray(female[flex : flex + 32]), bytearray(female[flex + 32 : flex + 64])
    struct.pack_into("<i", first, 24, _i(female, flex + 24) - 32)
    struct.pack_into("<i", second, 24, _i(female, flex + 56) + 32)
    out[flex : flex + 64] = second + first
    before = read_mdl_bytes(female).body_parts[0].models[0].meshes[0].flexes
    after = read_mdl_bytes(bytes(out)).body_parts[0].models[0].meshes[0].flexes
    for ours, theirs in ((after[0], before[1]), (after[1], before[0]), (after[2], before[2])):
        assert ours.desc == theirs.desc
        np.testing.assert_array_equal(ours.indices, theirs.indices)
        np.testing.assert_array_equal(ours.deltas, theirs.deltas)


def test_a_delta_direction_that_names_no_entry_is_refused(female):
    """A direction word that is not the byte offset of a table entry (not a multiple of 12, or past the table) is
    refused with the vertex and the word's offset, not read as some other direction."""
    _mesh, flex = _first_flexed_mesh(female)
    table = flex + _i(female, flex + 24)
    for word in (13, 12 * 5314):
        out = bytearray(female)
        struct.pack_into("<H", out, table + 2, word)
        with pytest.raises(FormatError, match=f"delta direction {word}, which names no direction") as caught:
            read_mdl_bytes(bytes(out), "female_citizen_3.mdl")
        assert caught.value.offset == table + 2
