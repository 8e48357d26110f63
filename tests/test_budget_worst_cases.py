"""Every work budget's worst case, built with the writers, converts and imports within 10 s and 1 GB.

A budget is only honest if what it lets through is affordable: for each limit in ``budget.py`` (and each kind of
unit it counts) a file that comes just under it at Work Limit 1.0 is imported through the operator in a process of
its own, timed and measured (peak resident memory) from outside. Slow: run on the LTS ends (``-m budget``).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import archive_worst_cases
import hostile
import numpy as np
import pytest
from conftest import bpy
from ms3d_writer import Group, Joint, Triangle, quad_spec, write_ms3d
from source_writer import (
    SAnimation,
    SBodyPart,
    SBone,
    SMesh,
    SModel,
    SNode,
    SourceSpec,
    SVertex,
    quad_mesh,
    write_mdl,
    write_source,
)
from test_blender_hostile_names import SFlex, SFlexes, _mesh_offset, _Tail, with_flexes
from test_hostile import run_import

from io_ms3d_mdl.budget import DEFAULT
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.model import MdlFlexRule
from io_ms3d_mdl.scene.ms3d.armature import MAX_RESAMPLED_FRAMES
from io_ms3d_mdl.scene.source.flex import rule_work
from io_ms3d_mdl.scene.source.flex_rules import ADD, LOWER_EYELID, MUL, NWAY

pytestmark = [
    pytest.mark.budget,
    pytest.mark.long,
    pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed; run ./scripts/test.sh"),
]

SECONDS, MEMORY = 10.0, 1 << 30
CONST, FETCH1, FETCH2 = 1, 2, 3

Built = tuple[Path, dict, int]  # the model, the operator's options, how many units of the budget it uses


def _one_mesh_spec(**overrides) -> SourceSpec:
    spec = SourceSpec(body_parts=[SBodyPart("b", [SModel("m0", [quad_mesh()])])])
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def _flexed(tmp: Path, flexes: SFlexes, stem: str = "flexed", spec: SourceSpec | None = None) -> Path:
    spec = spec or _one_mesh_spec()
    path = write_source(spec, tmp, stem)
    path.write_bytes(with_flexes(write_mdl(spec), flexes))
    return path


def _keyed(tmp: Path, flexes: SFlexes, keys: int, stem: str = "keyed", spec: SourceSpec | None = None) -> Path:
    """``_flexed`` with flexes 0..keys-1 on the first mesh, each moving one vertex (the writer's own flexes
    replace each other: a mesh gets one)."""
    path = _flexed(tmp, flexes, stem, spec)
    tail = _Tail(path.read_bytes())
    header = np.frombuffer(bytes(tail.buf), S.STUDIOHDR, 1).copy()
    moves = np.zeros(keys, S.VERTANIM)
    moves["index"] = np.arange(keys) % 4
    moves["delta"][:, 2] = np.array(1.0, "<f2").view("<u2")
    moves_at = tail.records(S.VERTANIM, moves)
    records = np.zeros(keys, S.FLEX)
    first = len(tail.buf) + (-len(tail.buf)) % 4
    at = first + np.arange(keys) * S.FLEX.itemsize
    records["flexdesc"], records["numverts"] = np.arange(keys), 1
    records["vertindex"] = moves_at + np.arange(keys) * S.VERTANIM.itemsize - at
    tail.records(S.FLEX, records)
    mesh_at = _mesh_offset(tail.buf, header[0], 0, 0, 0)
    mesh = np.frombuffer(bytes(tail.buf[mesh_at : mesh_at + S.MESH.itemsize]), S.MESH).copy()
    mesh[0]["numflexes"], mesh[0]["flexindex"] = keys, first - mesh_at
    tail.put(mesh_at, mesh)
    header[0]["length"] = len(tail.buf)
    tail.put(0, header)
    path.write_bytes(bytes(tail.buf))
    return path


def flex_shared_table(tmp: Path) -> Built:
    """The red-team case: 6,600 rules sharing one 301-operation table of eyelids (184 s before)."""
    ops = ([(CONST, 5.0), (CONST, 0.0), (CONST, 4.0), (LOWER_EYELID, 3), (CONST, 0.0), (MUL, 0)] * 51)[:301]
    controllers = [(f"c{i}", -1.0, 1.0) for i in range(8)]
    path = _flexed(tmp, SFlexes(["f0"], controllers, [(0, ops)], [SFlex(0, [(0, (0, 0, 1))])]))
    path.write_bytes(hostile.shared_flex_rules(path.read_bytes(), 6_600))
    return path, {}, rule_work([MdlFlexRule(0, ops)] * 6_600)


def _distinct_rules(pattern: Callable[[], list], controllers: int) -> list:
    """Rules of about 300 operations from ``pattern`` until the flex rule budget is all but spent."""
    rules, work = [], 0
    while True:
        ops = []
        while len(ops) < 301:
            ops += pattern()
        cost = rule_work([MdlFlexRule(0, ops)])
        if work + cost > DEFAULT.flex_rule_work:
            return rules
        rules.append((0, ops))
        work += cost


def flex_distinct_tables(kind: str) -> Callable[[Path], Built]:
    """Rules that share nothing, each operation of the kind that costs most per unit, over 2,000 controllers (so
    no remap is built twice)."""
    count = 2_000
    rnd = random.Random(kind)

    def c() -> float:
        return float(rnd.randrange(count))

    patterns = {
        "constants": lambda: [(CONST, rnd.random()), (CONST, rnd.random()), (ADD, 0)],
        "eyelids": lambda: [(CONST, c()), (CONST, c()), (CONST, c()), (LOWER_EYELID, int(c())), (CONST, 0.0), (MUL, 0)],
        "n-way ramps": lambda: [
            *[(FETCH1, int(c())) for _ in range(4)],
            (CONST, c()),
            (NWAY, int(c())),
            (CONST, 0.0),
            (MUL, 0),
        ],
    }

    def build(tmp: Path) -> Built:
        rules = _distinct_rules(patterns[kind], count)
        controllers = [(f"c{i}", -1.0 - i / 1000, 1.0) for i in range(count)]
        path = _flexed(tmp, SFlexes(["f0"], controllers, rules, [SFlex(0, [(0, (0, 0, 1))])]))
        return path, {}, rule_work([MdlFlexRule(0, ops) for _, ops in rules])

    return build


def chained_rules(count: int) -> Callable[[Path], Built]:
    """Each rule reads the weight the one before it left (FETCH2): every weight is a property with a driver."""

    def build(tmp: Path) -> Built:
        names = [f"f{i}" for i in range(count + 1)]
        rules = [(i, [(FETCH2, i - 1), (FETCH1, 0), (ADD, 0)]) for i in range(1, count + 1)] + [(0, [(FETCH2, count)])]
        path = _flexed(tmp, SFlexes(names, [("c", 0.0, 1.0)], rules, [SFlex(0, [(0, (0, 0, 1))])]))
        return path, {}, count + 1

    return build


def many_shape_keys(tmp: Path) -> Built:
    """As many one-vertex flexes as the shape key budget allows, on one quad."""
    count = DEFAULT.shape_keys
    path = _keyed(tmp, SFlexes([f"f{i}" for i in range(count)], [("c", 0.0, 1.0)]), count)
    return path, {}, count


def many_properties(tmp: Path) -> Built:
    """As many flex controllers (each a custom property with its range) as the property budget allows."""
    count = DEFAULT.custom_properties - 100  # the objects' and collections' own properties
    controllers = [(f"c{i}", 0.0, 1.0) for i in range(count)]
    path = _flexed(tmp, SFlexes(["f0"], controllers, [], [SFlex(0, [(0, (0, 0, 1))])]))
    return path, {}, count


def many_groups(count: int | None = None) -> Callable[[Path], Built]:
    return lambda tmp: _many_groups(tmp, count or DEFAULT.objects - 10)


def _many_groups(tmp: Path, count: int) -> Built:
    """A MilkShape model of one-triangle groups, as many as the object budget allows."""
    spec = quad_spec(
        triangles=[Triangle((0, 1, 2), s=(0, 1, 1), t=(1, 1, 0))] * count,
        groups=[Group(f"g{i}", [i], material_index=0) for i in range(count)],
    )
    path = tmp / "groups.ms3d"
    path.write_bytes(write_ms3d(spec))
    return path, {}, count


def many_actions(tmp: Path) -> Built:
    """Two-frame animations of a two-bone rig, as many as the action budget allows, all built."""
    count = DEFAULT.actions
    anims = [SAnimation(f"a{i}", 2, [SNode(1, rot=("q48", (1.0, 0.0, 0.0, 0.0)))]) for i in range(count)]
    spec = _one_mesh_spec(animations=anims, bones=[SBone("root"), SBone("b1", 0)])
    path = write_source(spec, tmp, "actions")
    return path, {"animations": "ALL"}, count


def long_animations(count: int) -> Callable[[Path], Built]:
    """``count`` animations of 40 bones × as many frames as the per-animation budget allows, one raw rotation per
    bone, in a model padded so its size allows them all (64 bone-frames a byte)."""

    def build(tmp: Path) -> Built:
        bones, frames = 40, DEFAULT.animation_bone_frames // 40
        nodes = [SNode(i, rot=("q48", (1.0, 0.0, 0.0, 0.0))) for i in range(bones)]
        anims = [SAnimation(f"a{i}", frames, nodes) for i in range(count)]
        spec = _one_mesh_spec(bones=[SBone(f"b{i}", i - 1) for i in range(bones)], animations=anims)
        path = write_source(spec, tmp, "frames")
        with path.open("ab") as f:  # not read by anything: only its size counts
            f.write(bytes(count * bones * frames // 64 + 1))
        return path, {"animations": "ALL"}, count * bones * frames

    return build


def big_files(suffixes: tuple[str, ...]) -> Callable[[Path], Built]:
    """A small model whose files (``suffixes``: .mdl, .vvd, .dx90.vtx, .phy) are padded to just under the file
    size budget: each is read whole into memory."""

    def build(tmp: Path) -> Built:
        path = write_source(_one_mesh_spec(), tmp, "big")
        size = DEFAULT.file_bytes - 4096
        for suffix in suffixes:
            with path.with_suffix(suffix).open("ab") as f:
                f.truncate(size)  # sparse on disk: zeros nothing reads (a .phy of them is refused, once read)
        return path, {}, size * len(suffixes)

    return build


def resampled_keys(tmp: Path) -> Built:
    """MilkShape joints whose keys lie about a thousand frames apart, each channel spanning the longest resampled
    span, with as many joints as the resampling budget allows (and keys enough stored for it)."""
    span, keys = MAX_RESAMPLED_FRAMES, 98
    joints = DEFAULT.resampled_keys(1 << 40) // (span + 1)
    times = [i * span / (keys - 1) / 24 for i in range(keys)]
    spec = quad_spec(
        fps=24.0,
        joints=[
            Joint(
                f"j{j}",
                f"j{j - 1}" if j else "",
                rotation_keys=[(t, (0, 0, 3.0 * (i % 2))) for i, t in enumerate(times)],
            )
            for j in range(joints)
        ],
    )
    path = tmp / "resampled.ms3d"
    path.write_bytes(write_ms3d(spec))
    return path, {}, joints * (span + 1)


def events(tmp: Path) -> Built:
    """Sequences that all list one table of 4,096 events, as many as the event budget allows: every event becomes
    a pose marker on the one animation they play."""
    sequences = DEFAULT.events // 4096
    anim = SAnimation("a", 2, [SNode(1, rot=("q48", (1.0, 0.0, 0.0, 0.0)))])
    spec = _one_mesh_spec(animations=[anim], bones=[SBone("root"), SBone("b1", 0)])
    path = hostile.source_event_bomb(tmp, sequences, 4096, spec)
    data = bytearray(path.read_bytes())
    header = np.frombuffer(bytes(data), S.STUDIOHDR, 1).copy()
    table = len(data)
    data += bytes(4)  # one blend cell: animation 0
    first = int(header[0]["localseqindex"])
    for i in range(sequences):  # each plays animation 0
        at = first + i * S.SEQDESC_SIZE + 56
        blend = np.zeros(1, S.SEQDESC_BLEND)
        blend["numblends"], blend["animindexindex"], blend["groupsize"] = 1, table - (at - 56), (1, 1)
        data[at : at + S.SEQDESC_BLEND.itemsize] = blend.tobytes()
    header[0]["length"] = len(data)
    data[: S.STUDIOHDR.itemsize] = header.tobytes()
    path.write_bytes(bytes(data))
    return path, {"animations": "ALL"}, sequences * 4096


def textures(tmp: Path) -> Built:
    """Four 4096² DXT1 textures: the largest texture, four times (the import's pixel budget)."""
    spec = _one_mesh_spec(textures=["t0", "t1", "t2", "t3"], skins=[[0], [1], [2], [3]])
    path = hostile.source(tmp, spec)
    folder = hostile.game(tmp) / "materials" / "models" / "test"
    for i in range(4):
        hostile.vmt(tmp, f"t{i}", f'"VertexLitGeneric"\n{{\n"$basetexture" "models/test/big{i}"\n}}\n')
        (folder / f"big{i}.vtf").write_bytes(
            hostile.vtf(4096, 4096, fmt=13, fill=bytes([i, 0x55, 0, 0xF8, 0, 0, 0, 0]))
        )
    return path, {}, DEFAULT.import_pixels


def triangles(tmp: Path) -> Built:
    """A grid of as many triangles as the triangle budget allows."""
    mesh = _grid(int((DEFAULT.triangles / 2) ** 0.5) + 1)
    path = write_source(SourceSpec(body_parts=[SBodyPart("b", [SModel("m0", [mesh])])]), tmp, "grid")
    return path, {}, len(mesh.triangles)


def _grid(side: int) -> SMesh:
    """A ``side`` × ``side`` grid of vertices in strip groups of about 20,000 vertices."""
    verts = [SVertex((x, y, 0.0), (0, 0, 1), (x / side, y / side)) for y in range(side) for x in range(side)]
    quads = [(y * side + x) for y in range(side - 1) for x in range(side - 1)]
    tris = [t for a in quads for t in ((a, a + 1, a + side + 1), (a, a + side + 1, a + side))]
    return SMesh(0, verts, tris, strip_groups=len(verts) // 20_000 + 1)


def shape_key_vertices(tmp: Path) -> Built:
    """A 65,536-vertex mesh with as many keys as the shape keys × vertices budget allows."""
    mesh = _grid(256)
    count = DEFAULT.shape_key_vertices // len(mesh.vertices)
    spec = SourceSpec(body_parts=[SBodyPart("b", [SModel("m0", [mesh])])])
    path = _keyed(tmp, SFlexes([f"f{i}" for i in range(count)], [("c", 0.0, 1.0)]), count, spec=spec)
    return path, {}, count * len(mesh.vertices)


# --- GoldSrc counts and skin tables (issue 31) ---------------------------------------------------------------------


def goldsrc_offers(tmp: Path) -> Built:
    """Sequences of 999 blends each (the table of every blend in the file, its channels at rest), as many
    animations on offer as the budget allows: every one is a row in the animation list."""
    from goldsrc_writer import GBone, GSequence, GSpec, write_model_files

    blends = 999
    count = (DEFAULT.animation_entries - 1) // blends
    rest = [[[None] * 6] for _ in range(blends)]
    sequences = [GSequence("idle", 2, [[[None] * 6]])] + [GSequence(f"s{i}", 2, rest) for i in range(count)]
    path = write_model_files(GSpec("offers.mdl", [GBone("root", -1)], sequences=sequences), tmp, "offers")
    return path, {}, 1 + count * blends


def skin_table(kind: str) -> Callable[[Path], Built]:
    """A skin table of as many entries (families × references) as the budget allows, every entry a material."""

    def build(tmp: Path) -> Built:
        refs = 1_000
        families = [[i % 3 for i in range(refs)] for _ in range(DEFAULT.skin_entries // refs)]
        if kind == "Source":
            path = write_source(_one_mesh_spec(textures=["t0", "t1", "t2"], skins=families), tmp, "skins")
        else:
            from goldsrc_writer import character_spec, write_model_files

            spec = character_spec()
            spec.skins = families
            path = write_model_files(spec, tmp, "skins")
        return path, {}, len(families) * refs

    return build


def goldsrc_leaping(tmp: Path) -> Built:
    """One bone of a million frames (the per-animation budget), each frame a span of its own holding 7 values
    (16 bytes): the chain spans all the data the leaping budget allows."""
    from goldsrc_writer import GBone, GSequence, GSpec, write_model_files

    frames = DEFAULT.animation_bone_frames
    span = (DEFAULT.animation_walk_bytes - 4096) // frames // 2 * 2  # bytes a span, within the budget
    valid = span // 2 - 1
    spans = np.zeros((frames, span), np.uint8)
    spans[:, 0], spans[:, 1] = valid, 1
    spans[:, 2:4] = (np.arange(frames) % 4000 - 2000).astype("<i2").view(np.uint8).reshape(-1, 2)
    sequence = GSequence("long", frames, [[[spans.tobytes()] + [None] * 5]])
    path = write_model_files(GSpec("long.mdl", [GBone("root", -1)], sequences=[sequence]), tmp, "long")
    return path, {}, frames * span


def goldsrc_short_commands(tmp: Path) -> Built:
    """A command list of one-vertex commands (each counts as a triangle), as many as the triangle budget allows,
    after one quad."""
    from goldsrc_writer import GBodyPart, GBone, GMesh, GModel, GSpec, write_model_files

    count = DEFAULT.triangles - 2
    verts = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)]
    strip = (1, [(i, 0, 0, 0) for i in range(4)])
    mesh = GMesh(0, [strip] + [(1, [(0, 0, 0, 0)])] * count)
    model = GModel("m", verts, [0] * 4, [(0, 0, 1)], [0], [mesh])
    spec = GSpec("short.mdl", [GBone("root", -1)], [GBodyPart("b", [model])])
    return write_model_files(spec, tmp, "short"), {}, count + 2


def goldsrc_shared_commands(tmp: Path) -> Built:
    """Meshes that all name one command list of 1,500 triangles, as many as the triangle budget allows: the list
    is walked once, and every mesh draws its triangles."""
    from goldsrc_writer import GBodyPart, GBone, GMesh, GModel, GSpec, write_goldsrc

    from io_ms3d_mdl.formats.goldsrc import structs as G

    side, meshes = 751, DEFAULT.triangles // 1_500
    verts = [(x, y, 0.0) for y in range(2) for x in range(side)]
    strip = (1, [(x + side * y, 0, x, y) for x in range(side) for y in range(2)])
    model = GModel("m", verts, [0] * len(verts), [(0, 0, 1)], [0], [GMesh(0, [strip])] * meshes)
    data = bytearray(write_goldsrc(GSpec("shared.mdl", [GBone("root", -1)], [GBodyPart("b", [model])])))
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER)[0]
    part = np.frombuffer(bytes(data), G.BODY_PART, 1, int(header["bodypartindex"]))[0]
    record = np.frombuffer(bytes(data), G.MODEL, 1, int(part["modelindex"]))[0]
    at = int(record["meshindex"])
    table = np.frombuffer(bytes(data[at : at + meshes * G.MESH.itemsize]), G.MESH).copy()
    table["triindex"] = table["triindex"][0]  # every mesh names the first one's list
    data[at : at + table.nbytes] = table.tobytes()
    path = tmp / "shared.mdl"
    path.write_bytes(bytes(data))
    return path, {}, meshes * 1_500


def goldsrc_listed(field: str) -> Callable[[Path], Built]:
    """As many bone controllers or sequence groups as the property budget allows: each an entry of a list
    property on the model."""

    def build(tmp: Path) -> Built:
        from goldsrc_writer import character_spec, write_model_files

        from io_ms3d_mdl.formats.goldsrc import structs as G

        count = DEFAULT.custom_properties
        path = write_model_files(character_spec(), tmp, "listed")
        data = bytearray(path.read_bytes())
        dtype = G.BONE_CONTROLLER if field == "numbonecontrollers" else G.SEQUENCE_GROUP
        at = len(data)
        data += np.zeros(count, dtype).tobytes()
        header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER).copy()
        index = "bonecontrollerindex" if field == "numbonecontrollers" else "seqgroupindex"
        header[field], header[index], header["length"] = count, at, len(data)
        data[: G.HEADER.itemsize] = header.tobytes()
        path.write_bytes(bytes(data))
        return path, {}, count

    return build


def goldsrc_group_files(tmp: Path) -> Built:
    """Two sequence-group files that together all but fill the file size budget, each holding a sequence."""
    from goldsrc_writer import character_spec, write_model_files

    spec = character_spec()
    spec.groups = ["", "groups01.mdl", "groups02.mdl"]
    spec.sequences[0].group = 2
    path = write_model_files(spec, tmp, "groups")
    size = DEFAULT.file_bytes // 2 - 4096
    for name in spec.groups[1:]:
        with (tmp / name).open("ab") as f:
            f.truncate(size)  # sparse: zeros after the animation data
    return path, {"animations": "ALL"}, 2 * size


def goldsrc_materials(tmp: Path) -> Built:
    """As many one-pixel textures as the material budget allows: each becomes a material with its image."""
    from goldsrc_writer import GTexture, character_spec, write_model_files

    spec = character_spec()
    spec.textures = [GTexture(f"t{i}.bmp", 1, 1) for i in range(DEFAULT.materials)]
    spec.skins = [[0, 1, 2]]
    return write_model_files(spec, tmp, "materials"), {}, DEFAULT.materials


def goldsrc_choices(tmp: Path) -> Built:
    """Body parts of ten blank choices each, as many collections as the object budget allows: all but the first
    choice of each part are hidden in the view layer."""
    from goldsrc_writer import GBodyPart, GModel, character_spec, write_model_files

    spec = character_spec()
    blank = GModel("blank", [], [], [], [], [])
    parts = (DEFAULT.objects - 20) // 11
    spec.body_parts = [GBodyPart(f"p{i}", [blank] * 10) for i in range(parts)]
    return write_model_files(spec, tmp, "choices"), {}, parts * 11


def goldsrc_meshes(tmp: Path) -> Built:
    """As many mesh records as the mesh budget allows, every one naming an empty command list."""
    from goldsrc_writer import character_spec, write_model_files

    from io_ms3d_mdl.formats.goldsrc import structs as G

    path = write_model_files(character_spec(), tmp, "meshes")
    data = bytearray(path.read_bytes())
    header = np.frombuffer(bytes(data[: G.HEADER.itemsize]), G.HEADER).copy()
    part = np.frombuffer(bytes(data), G.BODY_PART, 1, int(header[0]["bodypartindex"]))[0]
    at = int(part["modelindex"])
    model = np.frombuffer(bytes(data[at : at + G.MODEL.itemsize]), G.MODEL).copy()
    count = DEFAULT.meshes - 3  # the character's other meshes
    empty = len(data)
    data += bytes(4)  # a command list that ends at once
    meshes = np.zeros(count, G.MESH)
    meshes["triindex"] = empty
    model[0]["nummesh"], model[0]["meshindex"] = count, len(data)
    data += meshes.tobytes()
    data[at : at + G.MODEL.itemsize] = model.tobytes()
    header[0]["length"] = len(data)
    data[: G.HEADER.itemsize] = header.tobytes()
    path.write_bytes(bytes(data))
    return path, {}, count


CASES: dict[str, Callable[[Path], Built]] = {
    "flex rule work: 6,600 rules sharing a 301-operation table": flex_shared_table,
    "flex rule work: distinct rules of constants": flex_distinct_tables("constants"),
    "flex rule work: distinct rules of eyelids": flex_distinct_tables("eyelids"),
    "flex rule work: distinct rules of n-way ramps": flex_distinct_tables("n-way ramps"),
    "drivers: as many chained rules as the budget allows": chained_rules(DEFAULT.drivers - 1),
    "shape keys": many_shape_keys,
    "custom properties: flex controllers": many_properties,
    "objects: MilkShape groups": many_groups(),
    "actions": many_actions,
    "frames × bones: one animation": long_animations(1),
    "frames × bones: all animations": long_animations(DEFAULT.bone_frames(1 << 30) // DEFAULT.animation_bone_frames),
    "file size: the .mdl": big_files((".mdl",)),
    "file size: the .mdl, .vvd, .vtx and .phy": big_files((".mdl", ".vvd", ".dx90.vtx", ".phy")),
    "events": events,
    "MilkShape resampled keys": resampled_keys,
    "texture pixels": textures,
    "triangles": triangles,
    "shape keys × vertices": shape_key_vertices,
    "animations on offer: GoldSrc sequences × blends": goldsrc_offers,
    "skin table entries: Source": skin_table("Source"),
    "skin table entries: GoldSrc": skin_table("GoldSrc"),
    "animation data walked by leaping: GoldSrc, 1 M one-frame spans": goldsrc_leaping,
    "triangles: GoldSrc one-vertex commands": goldsrc_short_commands,
    "triangles: GoldSrc meshes sharing one command list": goldsrc_shared_commands,
    "custom properties: GoldSrc bone controllers (one list)": goldsrc_listed("numbonecontrollers"),
    "custom properties: GoldSrc sequence groups (one list)": goldsrc_listed("numseqgroups"),
    "file size: GoldSrc sequence-group files together": goldsrc_group_files,
    "materials: GoldSrc textures": goldsrc_materials,
    "objects: GoldSrc body-part choices (collections, hidden)": goldsrc_choices,
    "meshes: GoldSrc records naming an empty command list": goldsrc_meshes,
    **archive_worst_cases.IMPORT_CASES,
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_worst_case_of_each_budget_fits_10_s_and_1_gb(tmp_path, case):
    path, options, _units = CASES[case](tmp_path)
    result, lines, seconds, memory = run_import(path, **options)
    assert result["status"] == ["FINISHED"], (result["error"], lines[-20:])
    print(f"{case}: {seconds:.1f} s ({result['seconds']:.1f} s importing), {memory / 2**20:.0f} MiB")
    assert seconds < SECONDS, f"{case}: {seconds:.1f} s"
    assert memory < MEMORY, f"{case}: {memory / 2**20:.0f} MiB"


@pytest.mark.parametrize("case", list(archive_worst_cases.LISTING_CASES))
def test_the_worst_listing_fits_10_s_and_1_gb(tmp_path, case):
    """Browse Game Models and ``mounts.list_models`` over the largest archives the budgets let through (or stop
    short of): the models are charged before their rows are made."""
    build, how = archive_worst_cases.LISTING_CASES[case]
    path = build(tmp_path)
    tests = Path(__file__).resolve().parent
    code = archive_worst_cases.PROBE.format(root=str(tests.parent), tests=str(tests), how=how, path=str(path))
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = proc.stdout.read()
    _, status, _ = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    results = [json.loads(line[7:]) for line in out.splitlines() if line.startswith("RESULT ")]
    assert os.waitstatus_to_exitcode(status) == 0 and results, out[-3000:]
    result = results[0]
    print(f"{case}: {seconds:.1f} s, {result['peak_bytes'] / 2**20:.0f} MiB, {result['count']:,} listed")
    if "at the budget" in case:
        assert result["count"] == DEFAULT.listed_models and not result["note"]
    else:
        assert "models listed" in result["note"] and result["count"] < DEFAULT.listed_models
    assert seconds < SECONDS, f"{case}: {seconds:.1f} s"
    assert result["peak_bytes"] < MEMORY, f"{case}: {result['peak_bytes'] / 2**20:.0f} MiB"
