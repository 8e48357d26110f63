"""The ``.phy`` reader and the physics collection it becomes (no Blender): real samples and crafted files."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
from conftest import samples_dir
from phy_writer import PhySpec, PSolid, box, solid_offsets, solid_text, write_phy
from source_writer import character_spec, write_source

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.source.phy import parse_blocks, read_phy, read_phy_bytes
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions

# Single-solid models; the cube's hull was compiled in the pose of its idle, which turns the root bone 120°
PROPS = {"pushcart01a", "metal_box", "pipe02_45degree01", "monster_cube"}


def phy_samples() -> list[tuple[Path, Path]]:
    """Every sample model with a .phy beside it (names differ in case: PushCart01a.phy)."""
    out = []
    for phy in sorted(samples_dir().rglob("*"), key=lambda p: str(p).lower()):
        if phy.suffix.lower() != ".phy":
            continue
        mdl = next((p for p in phy.parent.iterdir() if p.name.lower() == phy.stem.lower() + ".mdl"), None)
        if mdl is not None:
            out.append((mdl, phy))
    return out


def physics(scene):
    found = [c for c in scene.collections if c.name.endswith(" physics")]
    return found[0] if found else None


def header_count(path: Path) -> int:
    return struct.unpack_from("<i", path.read_bytes(), 8)[0]


def model_box(scene) -> tuple[np.ndarray, np.ndarray]:
    solids = set(physics(scene).objects) if physics(scene) else set()
    points = np.concatenate([o.mesh.positions for i, o in enumerate(scene.objects) if i not in solids])
    return points.min(axis=0), points.max(axis=0)


def test_every_sample_reads_its_declared_solids():
    samples = phy_samples()
    assert len(samples) >= 7
    for mdl, phy_path in samples:
        phy = read_phy(phy_path)
        assert len(phy.solids) == phy.solid_count == header_count(phy_path), phy_path.name
        assert all(s.pieces for s in phy.solids)
        scene = load_source(str(mdl), SourceOptions(import_animations=False, find_materials=False))
        coll = physics(scene)
        assert coll is not None and coll.hidden and len(coll.objects) == header_count(phy_path), mdl.name
        for index in coll.objects:
            obj = scene.objects[index]
            assert obj.skin is None and obj.display == "WIRE" and len(obj.mesh.triangles) >= 4


def test_ragdoll_pieces_follow_the_bones_they_are_named_after():
    for mdl, _ in phy_samples():
        scene = load_source(str(mdl), SourceOptions(import_animations=False, find_materials=False))
        objects = [scene.objects[i] for i in physics(scene).objects]
        if len(objects) == 1:
            continue
        bones = {b.name for b in scene.skeleton.bones}
        for obj in objects:
            assert obj.bone == obj.props["source_phy_name"] and obj.bone in bones, (mdl.name, obj.name)
        limited = [o for o in objects if "source_constraint_xmin" in o.props]
        assert len(limited) == len(objects) - 1  # every solid but the root hangs from a parent
        for obj in limited:
            assert obj.props["source_constraint_xmin"] <= obj.props["source_constraint_xmax"]
            assert isinstance(obj.props["source_constraint_parent"], str)
            assert {"source_phy_mass", "source_phy_surfaceprop"} <= obj.props.keys()


def test_pieces_lie_inside_the_model():
    """Wrong axes or scale would throw the solids off the mesh: each solid's centre lies in the mesh's box."""
    for mdl, _ in phy_samples():
        scene = load_source(str(mdl), SourceOptions(import_animations=False, find_materials=False))
        lo, hi = model_box(scene)
        margin = 0.05 * np.linalg.norm(hi - lo)
        for index in physics(scene).objects:
            points = scene.objects[index].mesh.positions
            centre = (points.min(axis=0) + points.max(axis=0)) / 2
            assert np.all(centre >= lo - margin) and np.all(centre <= hi + margin), (mdl.name, index, centre, lo, hi)


def test_prop_hulls_match_the_visual_mesh():
    checked = 0
    for mdl, _ in phy_samples():
        if mdl.stem.lower() not in PROPS:
            continue
        scene = load_source(str(mdl), SourceOptions(import_animations=False, find_materials=False))
        lo, hi = model_box(scene)
        (index,) = physics(scene).objects
        points = scene.objects[index].mesh.positions
        error = max(np.abs(points.min(axis=0) - lo).max(), np.abs(points.max(axis=0) - hi).max())
        assert error <= 0.06 * np.linalg.norm(hi - lo), mdl.name
        checked += 1
    assert checked == 4


def test_checksum_mismatch_warns_and_still_imports():
    (mdl,) = [m for m, _ in phy_samples() if m.stem.lower() == "monster_cube"]
    scene = load_source(str(mdl), SourceOptions(import_animations=False, find_materials=False))
    assert any(".phy) checksum" in w for w in scene.warnings)
    assert len(physics(scene).objects) == 1


def test_option_off_gives_no_physics():
    mdl = phy_samples()[0][0]
    scene = load_source(str(mdl), SourceOptions(import_animations=False, import_physics=False))
    assert physics(scene) is None
    assert not any(o.display == "WIRE" for o in scene.objects)


@pytest.mark.parametrize("layout", ["vphy", "legacy", "wide"])
def test_layouts_round_trip(layout):
    spec = PhySpec(
        [
            PSolid([box((0, 0, 0), (1, 2, 3), 0), box((1, 0, 0), (2, 2, 3), 0)], True),
            PSolid([box((-1,) * 3, (1,) * 3, 1)]),
        ],
        text=solid_text(["pelvis", "spine"], [(0, 1, {"xmin": -10, "xmax": 20})]),
        layout=layout,
    )
    phy = read_phy_bytes(write_phy(spec), "x.phy")
    assert [len(s.pieces) for s in phy.solids] == [2, 1]  # the tree hull (a ledge with children) is skipped
    first = phy.solids[0].pieces[0]
    np.testing.assert_allclose(first.points.min(axis=0), (0, 0, 0), atol=1e-5)
    np.testing.assert_allclose(first.points.max(axis=0), (1, 2, 3), atol=1e-5)
    assert phy.solids[1].bone == 1 and phy.constraint_of(1)["xmax"] == "20.000000"


def test_character_ragdoll_is_placed_by_bone(tmp_path):
    """The spine solid is stored in the spine's space (turned 90° about Z, 2 units up): it lands there."""
    path = write_source(character_spec(), tmp_path, "guy")
    spec = PhySpec(
        [PSolid([box((-1, -1, -1), (1, 1, 1), 0)]), PSolid([box((0, -0.5, -0.5), (2, 0.5, 0.5), 1)])],
        text=solid_text(["pelvis", "spine"], [(0, 1, {"xmin": -10, "xmax": 20, "zfriction": 0.5})]),
    )
    (tmp_path / "guy.phy").write_bytes(write_phy(spec))
    scene = load_source(str(path), SourceOptions(scale=1.0, import_animations=False))
    pelvis, spine = (scene.objects[i] for i in physics(scene).objects)
    assert (pelvis.bone, spine.bone) == ("pelvis", "spine")
    np.testing.assert_allclose(spine.mesh.positions.min(axis=0), (-0.5, 0, 1.5), atol=1e-5)
    np.testing.assert_allclose(spine.mesh.positions.max(axis=0), (0.5, 2, 2.5), atol=1e-5)
    assert spine.props["source_constraint_zfriction"] == 0.5 and spine.props["source_constraint_parent"] == "pelvis"
    assert "source_constraint_xmin" not in pelvis.props


def crafted(kind: str) -> bytes:
    data = bytearray(write_phy(PhySpec([PSolid([box((0, 0, 0), (1, 1, 1), 0)])], text=solid_text(["pelvis"]))))
    first = solid_offsets(bytes(data))[0]
    if kind == "truncated":
        return bytes(data[: first + 60])
    if kind == "huge count":
        struct.pack_into("<i", data, 8, 0x7FFFFFFF)
    elif kind == "solid past end":
        struct.pack_into("<i", data, first, len(data) * 4)
    elif kind == "triangles past end":
        struct.pack_into("<h", data, first + 4 + 28 + 48 + 12, 30000)
    elif kind == "points past end":
        struct.pack_into("<i", data, first + 4 + 28 + 48, 1 << 20)
    elif kind == "no IVPS":
        data[first + 4 + 28 + 44 : first + 4 + 28 + 48] = b"XXXX"
    elif kind == "header size":
        struct.pack_into("<i", data, 0, 1 << 30)
    return bytes(data)


KINDS = ["truncated", "huge count", "solid past end", "triangles past end", "points past end", "no IVPS", "header size"]


@pytest.mark.parametrize("kind", KINDS)
def test_crafted_files_are_format_errors(kind):
    with pytest.raises(FormatError) as caught:
        read_phy_bytes(crafted(kind), "bad.phy")
    assert caught.value.message.startswith("bad.phy") and caught.value.offset is not None


@pytest.mark.parametrize("kind", KINDS)
def test_a_broken_phy_never_fails_the_model(tmp_path, kind):
    path = write_source(character_spec(), tmp_path, "guy")
    (tmp_path / "guy.phy").write_bytes(crafted(kind))
    scene = load_source(str(path), SourceOptions(import_animations=False))
    assert any("collision model was not imported" in w for w in scene.warnings)
    assert physics(scene) is None and scene.objects and scene.skeleton is not None


def test_text_parser_is_tolerant():
    text = '// comment\nsolid { "index" "0" "name" "a b" } } stray\neditparams {\n"rootname" ""\n}\n'
    text += 'collisionrules { "collisionpair" "0,1" "collisionpair" "1,2" nested { "deep" "1" } }'
    blocks = parse_blocks(text)
    assert [n for n, _ in blocks] == ["solid", "editparams", "collisionrules"]
    assert blocks[0][1] == {"index": "0", "name": "a b"} and blocks[1][1] == {"rootname": ""}
    assert blocks[2][1]["collisionpair"] == ["0,1", "1,2"] and blocks[2][1]["nested"] == {"deep": "1"}
    deep = parse_blocks("x " + "{ y " * 100 + '"a" "b"' + "}" * 100 + ' next { "k" "v" }')
    assert [n for n, _ in deep] == ["x", "next"] and deep[1][1] == {"k": "v"}
    block, depth = deep[0][1], 1
    while isinstance(block.get("y"), dict):
        block, depth = block["y"], depth + 1
    assert depth == 8  # nesting is bounded; what lies deeper stays in the deepest block


def test_reader_is_bytes_or_path(tmp_path):
    data = write_phy(PhySpec([PSolid([box((0, 0, 0), (1, 1, 1))])]))
    (tmp_path / "a.phy").write_bytes(data)
    assert os.fspath(read_phy(tmp_path / "a.phy").path).endswith("a.phy")
    assert read_phy_bytes(data).solid_count == 1


def test_solids_are_meshed_together_but_never_merged_across_solids():
    """All solids are meshed in one pass: equal points merge within a solid only, a face two pieces of a solid
    share is kept once, a solid whose pieces are unusable gets no mesh, and each solid sits where its matrix puts
    it — the same as meshing each solid alone."""
    from io_ms3d_mdl.formats.source.phy import PhyPiece, PhySolid
    from io_ms3d_mdl.scene.source.physics import _solid_meshes

    square = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)
    halves = [
        PhyPiece(square, np.array([[0, 1, 2]], np.int32), -1),
        PhyPiece(square, np.array([[0, 2, 3]], np.int32), -1),
    ]
    twice = PhyPiece(square, np.array([[0, 1, 2]], np.int32), -1)
    broken = PhyPiece(np.full((3, 3), np.nan, np.float32), np.array([[0, 1, 2]], np.int32), -1)
    solids = [
        PhySolid(0, 0, halves, 0),  # two pieces sharing points: one mesh of 4 points
        PhySolid(1, 0, [twice, twice], 0),  # the same face from two pieces: kept once
        PhySolid(2, 0, [broken], 0),  # nothing usable
        PhySolid(3, 0, halves, 0),  # the same points as solid 0, placed elsewhere
    ]
    placements = np.tile(np.eye(4), (4, 1, 1))
    placements[3, :3, 3] = (10, 0, 0)
    meshes = _solid_meshes(solids, placements, 2.0, ["a", "b", "c", "d"])
    assert meshes[2] is None
    assert [len(m.positions) for m in (meshes[0], meshes[1], meshes[3])] == [4, 3, 4]
    assert [len(m.triangles) for m in (meshes[0], meshes[1], meshes[3])] == [2, 1, 2]
    np.testing.assert_array_equal(
        meshes[3].positions, meshes[0].positions + np.array((20, 0, 0), np.float32)
    )  # scaled by 2
    np.testing.assert_array_equal(meshes[3].triangles, meshes[0].triangles)
    for s in (0, 1, 3):
        alone = _solid_meshes([solids[s]], placements[s : s + 1], 2.0, ["x"])[0]
        np.testing.assert_array_equal(alone.positions, meshes[s].positions)
        np.testing.assert_array_equal(alone.triangles, meshes[s].triangles)


def test_pieces_reaching_a_shared_pool_are_charged_as_they_are_found():
    """Pieces are made after the walk, all at once, but what reading each one's points costs is charged to the
    budget where the walk finds it: thousands of one-triangle pieces each reaching the last of 65,536 shared
    points (a small file asking for gigabytes) are refused at once, before anything is gathered."""
    import time

    from io_ms3d_mdl.errors import BudgetExceeded

    pieces, pool = 20_000, 65_536
    surface = struct.pack("<7f", 0, 0, 0, 1, 1, 1, 1) + struct.pack("<4i", 0, 0, 0, 0) + b"IVPS"
    points_at = len(surface) + pieces * 32
    body = bytearray(surface)
    triangle = (
        struct.pack("<I", 0) + struct.pack("<Hh", 0, 0) + struct.pack("<Hh", 1, 0) + struct.pack("<Hh", pool - 1, 0)
    )
    for _ in range(pieces):  # ledge: point offset from itself, client data, flags (no children), one triangle
        body += struct.pack("<iiIhh", points_at - len(body), 1, 2 << 8, 1, 0) + triangle
    body += np.tile(np.array([0.1, 0.2, 0.3, 0.0], np.float32), pool).tobytes()
    solid = b"VPHY" + struct.pack("<hhi3fi", 0x100, 0, len(body), 1, 1, 1, 0) + bytes(body)
    data = struct.pack("<4i", 16, 0, 1, 0) + struct.pack("<i", len(solid)) + solid + b"\0"
    start = time.perf_counter()
    with pytest.raises(BudgetExceeded, match="points of solid 0"):
        read_phy_bytes(data, "shared.phy")
    assert time.perf_counter() - start < 1.0
