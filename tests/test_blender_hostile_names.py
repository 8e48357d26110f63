"""Names from strangers' files in real Blender: longer than Blender's 63 bytes once encoded as UTF-8, repeated,
colliding after shortening, or spelled like our own properties. Every one imports, under a name Blender keeps
exactly, with the file's name kept beside it."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

import numpy as np
import pytest
from ms3d_writer import Joint, Triangle, Vertex, VertexExtra, quad_spec, write_ms3d
from source_writer import SAnimation, SBone, SNode, character_spec, write_mdl, write_source
from test_blender_ms3d_anim import check_against_reference
from test_ms3d_rig import arm_spec

from io_ms3d_mdl.formats.source import structs as S

pytestmark = pytest.mark.blender

# --- a flex writer on top of tests/source_writer.py -------------------------------------------------------------


@dataclass
class SFlex:
    """One mesh flex: ``moves`` are (vertex index in the mesh, delta); ``mesh``: (body part, model, mesh)."""

    desc: int
    moves: list[tuple[int, tuple[float, float, float]]]
    mesh: tuple[int, int, int] = (0, 0, 0)


@dataclass
class SFlexes:
    names: list[str | bytes]
    controllers: list[tuple[str | bytes, float, float]] = field(default_factory=list)  # (name, min, max)
    rules: list[tuple[int, list[tuple[int, float]]]] = field(default_factory=list)  # (desc, [(op, value)])
    flexes: list[SFlex] = field(default_factory=list)


def _text(value: str | bytes) -> bytes:
    """Latin-1 where it fits (one byte per character, like old compilers wrote), else UTF-8."""
    if isinstance(value, bytes):
        return value
    try:
        return value.encode("latin-1")
    except UnicodeEncodeError:
        return value.encode("utf-8")


class _Tail:
    """Appends tables to a finished .mdl; offsets are absolute, callers make them relative."""

    def __init__(self, data: bytes) -> None:
        self.buf = bytearray(data)

    def add(self, data: bytes) -> int:
        self.buf += b"\0" * (-len(self.buf) % 4)
        self.buf += data
        return len(self.buf) - len(data)

    def string(self, value: str | bytes) -> int:
        return self.add(_text(value) + b"\0")

    def records(self, dtype: np.dtype, rows: np.ndarray) -> int:
        return self.add(rows.astype(dtype).tobytes())

    def put(self, offset: int, rows: np.ndarray) -> None:
        self.buf[offset : offset + rows.nbytes] = rows.tobytes()


def with_flexes(mdl: bytes, spec: SFlexes) -> bytes:
    """``mdl`` with flex descriptors, controllers, rules and mesh flexes added (the writer has none)."""
    tail = _Tail(mdl)
    header = np.frombuffer(mdl, S.STUDIOHDR, 1).copy()
    h = header[0]
    h["numflexdesc"], h["flexdescindex"] = len(spec.names), _named_table(tail, spec.names)
    _controllers(tail, h, spec.controllers)
    _rules(tail, h, spec.rules)
    for flex in spec.flexes:
        _mesh_flex(tail, h, flex)
    h["length"] = len(tail.buf)
    tail.put(0, header)
    return bytes(tail.buf)


def _named_table(tail: _Tail, names: list[str | bytes]) -> int:
    table = np.zeros(len(names), S.FLEXDESC)
    at = tail.records(S.FLEXDESC, table)
    for i, name in enumerate(names):
        table[i]["szfacsindex"] = tail.string(name) - (at + i * S.FLEXDESC.itemsize)
    tail.put(at, table)
    return at


def _controllers(tail: _Tail, h: np.void, controllers: list[tuple[str | bytes, float, float]]) -> None:
    table = np.zeros(len(controllers), S.FLEXCONTROLLER)
    at = tail.records(S.FLEXCONTROLLER, table)
    for i, (name, lo, hi) in enumerate(controllers):
        base = at + i * S.FLEXCONTROLLER.itemsize
        table[i]["sznameindex"] = tail.string(name) - base
        table[i]["sztypeindex"] = tail.string("default") - base
        table[i]["localtoglobal"], table[i]["min"], table[i]["max"] = i, lo, hi
    tail.put(at, table)
    h["numflexcontrollers"], h["flexcontrollerindex"] = len(controllers), at


def _rules(tail: _Tail, h: np.void, rules: list[tuple[int, list[tuple[int, float]]]]) -> None:
    table = np.zeros(len(rules), S.FLEXRULE)
    at = tail.records(S.FLEXRULE, table)
    for i, (desc, ops) in enumerate(rules):
        rows = np.zeros(len(ops), S.FLEXOP)
        for k, (op, value) in enumerate(ops):
            rows[k]["op"] = op
            rows[k]["value"] = struct.unpack("<i", struct.pack("<f", value))[0] if op == 1 else int(value)
        table[i]["flex"], table[i]["numops"] = desc, len(ops)
        table[i]["opindex"] = tail.records(S.FLEXOP, rows) - (at + i * S.FLEXRULE.itemsize)
    tail.put(at, table)
    h["numflexrules"], h["flexruleindex"] = len(rules), at


def _mesh_offset(buf: bytearray, h: np.void, part: int, model: int, mesh: int) -> int:
    bp_at = int(h["bodypartindex"]) + part * S.BODYPART.itemsize
    bp = np.frombuffer(bytes(buf[bp_at : bp_at + S.BODYPART.itemsize]), S.BODYPART)[0]
    m_at = bp_at + int(bp["modelindex"]) + model * S.MODEL.itemsize
    rec = np.frombuffer(bytes(buf[m_at : m_at + S.MODEL.itemsize]), S.MODEL)[0]
    return m_at + int(rec["meshindex"]) + mesh * S.MESH.itemsize


def _mesh_flex(tail: _Tail, h: np.void, flex: SFlex) -> None:
    """One flex on one mesh (each call replaces that mesh's flex list with a list of one)."""
    mesh_at = _mesh_offset(tail.buf, h, *flex.mesh)
    verts = np.zeros(len(flex.moves), S.VERTANIM)
    for k, (index, delta) in enumerate(flex.moves):
        verts[k]["index"], verts[k]["side"] = index, 0
        verts[k]["delta"] = np.array(delta, "<f2").view("<u2")
    record = np.zeros(1, S.FLEX)
    flex_at = tail.records(S.FLEX, record)
    record[0]["flexdesc"], record[0]["numverts"] = flex.desc, len(verts)
    record[0]["vertindex"] = tail.records(S.VERTANIM, verts) - flex_at
    tail.put(flex_at, record)
    mesh = np.frombuffer(bytes(tail.buf[mesh_at : mesh_at + S.MESH.itemsize]), S.MESH).copy()
    mesh[0]["numflexes"], mesh[0]["flexindex"] = 1, flex_at - mesh_at
    tail.put(mesh_at, mesh)


def write_source_with_flexes(spec, flexes: SFlexes, folder, stem: str):
    path = write_source(spec, folder, stem)
    path.write_bytes(with_flexes(write_mdl(spec), flexes))
    return path


def utf8_len(name: str) -> int:
    return len(name.encode("utf-8"))


def fcurves(action):
    """An action's F-curves on any version (5.0 keeps them only in the slot's channelbag)."""
    if not hasattr(action, "layers") or not action.layers:
        return list(action.fcurves)
    return [fc for strip in action.layers[0].strips for bag in strip.channelbags for fc in bag.fcurves]


# --- MilkShape -------------------------------------------------------------------------------------------------

E31 = "é" * 31  # 62 UTF-8 bytes
E32 = b"\xe9" * 32  # a full 32-byte joint name in Latin-1: 'é' × 32 is 64 UTF-8 bytes


def hostile_joints_spec():
    """Five joints: two with the same 64-byte name, one equal to their shortened name, one of 32 cp1252 '€' (96
    UTF-8 bytes), one with quotes and a backslash; each moves one vertex."""
    spec = quad_spec()
    spec.vertices = [Vertex((x, y, 0), j) for j in range(5) for x, y in ((0, j), (1, j))]
    spec.triangles = []
    for a in range(0, 8, 2):  # a ladder of quads up the joints
        spec.triangles += [Triangle((a, a + 1, a + 3)), Triangle((a, a + 3, a + 2))]
    spec.groups[0].triangles = list(range(len(spec.triangles)))
    turn = [(1 / 24, (0, 0, 0)), (3 / 24, (0, 0, 1.0))]
    spec.joints = [
        Joint(E32),
        Joint(E32, E32, position=(0, 1, 0), rotation_keys=turn),
        Joint(E31.encode("latin-1"), E32, position=(0, 2, 0), rotation_keys=turn),
        Joint(b"\x80" * 32, E32, position=(0, 3, 0), position_keys=[(1 / 24, (0, 0, 0)), (3 / 24, (1, 0, 0))]),
        Joint(b'say "hi"\\', E32, position=(0, 4, 0), rotation_keys=turn),
    ]
    spec.vertex_extra = [VertexExtra() for _ in spec.vertices]
    return spec


def test_long_and_repeated_joint_names_become_bones_blender_keeps(blender, tmp_path):
    bpy = blender
    path = tmp_path / "names.ms3d"
    path.write_bytes(write_ms3d(hostile_joints_spec()))
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    arm = bpy.data.objects["names"]
    expected = [E31, "é" * 29 + ".001", "é" * 29 + ".002", "€" * 21, 'say "hi"\\']
    assert [b.name for b in arm.data.bones] == expected
    assert all(utf8_len(b.name) <= 63 for b in arm.data.bones)
    originals = [b.get("ms3d_name") for b in arm.data.bones]
    assert originals == ["é" * 32, "é" * 32, E31, "€" * 32, None]  # kept only where Blender's name differs
    mesh = bpy.data.objects["quad"]
    assert {g.name for g in mesh.vertex_groups} == set(expected)
    # every curve reaches its bone, and the posed mesh is MilkShape's
    curves = fcurves(arm.animation_data.action)
    assert curves and all(arm.path_resolve(fc.data_path, False) is not None for fc in curves)
    check_against_reference(bpy, path, {}, frames=[1.0, 2.0, 3.0])


def test_long_group_and_material_names_import(blender, tmp_path):
    """Objects, meshes and materials are datablocks: Blender shortens them itself (4.x) and nothing looks them up
    again by the file's name."""
    bpy = blender
    spec = quad_spec()
    spec.groups[0].name = E32
    spec.materials[0].name = b"\x80" * 32
    path = tmp_path / "ids.ms3d"
    path.write_bytes(write_ms3d(spec))
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    (obj,) = bpy.data.collections["ids"].objects
    assert obj.name.startswith("é" * 20) and obj.material_slots[0].material.name.startswith("€" * 10)


def test_groups_named_like_the_armatures_working_name_keep_their_names(blender, tmp_path):
    """The armature is made before the meshes under a working name no object of the file asks for, and takes its
    own name (and its place after the meshes in the collection) once they exist."""
    from ms3d_writer import Group

    bpy = blender
    spec = arm_spec()
    spec.groups = [Group("io_ms3d_mdl armature", [0]), Group("io_ms3d_mdl armature 1", [1])]
    path = tmp_path / "rig.ms3d"
    path.write_bytes(write_ms3d(spec))
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    names = [o.name for o in bpy.data.collections["rig"].objects]
    assert names == ["io_ms3d_mdl armature", "io_ms3d_mdl armature 1", "rig"]
    assert bpy.data.objects["rig"].type == "ARMATURE"


# --- Source ----------------------------------------------------------------------------------------------------

LONG = "é" * 40  # 80 UTF-8 bytes; Latin-1 in the file


def long_names_spec():
    spec = character_spec()
    spec.bones = [SBone(LONG + "a", -1, (0, 0, 1)), SBone(LONG + "b", 0, (0, 0, 1), (0.0, 0.0, 0.7071068, 0.7071068))]
    return spec


LONG_FLEXES = SFlexes(
    names=[LONG + "x", LONG + "y", "Basis"],
    controllers=[(LONG + "1", 0.0, 1.0), (LONG + "2", -1.0, 1.0)],
    rules=[(0, [(2, 0), (1, 0.5), (6, 0)]), (1, [(2, 0), (2, 1), (13, 0)])],  # c0 * 0.5; max(c0, c1)
    flexes=[SFlex(0, [(0, (0, 0, 1))]), SFlex(1, [(1, (0, 0, 1))], (0, 0, 1)), SFlex(2, [(0, (1, 0, 0))], (1, 1, 0))],
)


def test_long_source_bone_and_flex_names(blender, tmp_path):
    bpy = blender
    path = write_source_with_flexes(long_names_spec(), LONG_FLEXES, tmp_path, "guy")
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), units="SOURCE", animations="ALL") == {"FINISHED"}
    arm = bpy.data.objects["guy"]
    assert [b.name for b in arm.data.bones] == [E31, "é" * 29 + ".001"]
    assert [b["source_name"] for b in arm.data.bones] == [LONG + "a", LONG + "b"]
    body = bpy.data.objects["body_ref"]
    assert {g.name for g in body.vertex_groups} == {E31, "é" * 29 + ".001"}
    assert [k.name for k in body.data.shape_keys.key_blocks] == ["Basis", E31, "é" * 29 + ".001"]
    assert [dict(d) for d in body["source_flex_key_names"]] == [
        {"name": E31, "source_name": LONG + "x"},
        {"name": "é" * 29 + ".001", "source_name": LONG + "y"},
    ]
    hat = bpy.data.objects["hat_ref"]
    assert [k.name for k in hat.data.shape_keys.key_blocks] == ["Basis", "Basis.001"]  # a flex named "Basis"
    controls = ["flex:" + "é" * 29, "flex:" + "é" * 27 + ".001"]
    assert all(utf8_len(c) == 63 for c in controls) and all(c in body for c in controls)
    assert [d["source_name"] for d in body["source_flex_controller_names"]] == [LONG + "1", LONG + "2"]
    assert body.id_properties_ui(controls[1]).as_dict()["min"] == -1.0
    # the drivers reach the shortened controllers: c0 * 0.5 and max(c0, c1)
    keys = body.data.shape_keys.key_blocks
    body[controls[0]], body[controls[1]] = 0.8, 0.2
    body.update_tag()
    bpy.context.view_layer.update()
    assert keys[1].value == pytest.approx(0.4) and keys[2].value == pytest.approx(0.8)
    bpy.context.scene.frame_set(0)
    np.testing.assert_allclose(arm.data.bones[1].head_local, (0, 0, 2), atol=1e-6)


def test_long_animation_and_clip_names_stay_readable(blender, tmp_path):
    """5.0 keeps long action names, but NLA tracks, strips and markers still hold 63 bytes; Blender would cut
    them mid-character, leaving names Python cannot read."""
    bpy = blender
    turn = ("rle", [[0] * 3, [0] * 3, [0, 256, 512]])
    names = ["é" * 100, "é" * 99 + "x", "idle"]
    spec = character_spec(animations=[SAnimation(n, 3, [SNode(1, turn)]) for n in names])
    path = write_source(spec, tmp_path, "€" * 60)
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    arm = next(o for o in bpy.data.objects if o.type == "ARMATURE")
    tracks = arm.animation_data.nla_tracks
    assert len(tracks) == 3 and [utf8_len(t.strips[0].name) <= 63 for t in tracks] == [True] * 3
    assert tracks[2].name == "idle" and tracks[0].name == E31

    clip = "é" * 100
    path = tmp_path / "clips.ms3d"
    path.write_bytes(write_ms3d(arm_spec(model_comment=f"Name={clip}, Start=1, End=3\nName={clip}, Start=2, End=3")))
    assert bpy.ops.import_scene.ms3d(filepath=str(path)) == {"FINISHED"}
    strips = [s.name for t in bpy.data.objects["clips"].animation_data.nla_tracks for s in t.strips]
    assert len(strips) == 2 and all(utf8_len(n) <= 63 for n in strips) and strips[0] == E31
    markers = [m.name for m in bpy.context.scene.timeline_markers]
    assert markers == [E31, E31] and bpy.data.objects["clips"]["ms3d_clips"][0]["name"] == clip


def test_unique_names_fit_blender_and_stay_linear():
    """The scene layer's naming, without Blender: character boundaries, numbering, reserved names, many repeats."""
    from io_ms3d_mdl.scene.names import shorten, unique_names

    assert shorten("😀" * 20) == "😀" * 15 and shorten("a\0b") == "ab" and shorten("€" * 30, 10) == "€" * 3
    assert unique_names(["", "x", "x", "x.001", "Basis"], "bone", taken=["Basis"]) == [
        "bone0",
        "x",
        "x.001",
        "x.001.001",
        "Basis.001",
    ]
    many = unique_names(["é" * 40] * 5000)
    assert len(set(many)) == 5000 and max(utf8_len(n) for n in many) <= 63 and many[-1] == "é" * 29 + ".4999"
