"""Source MDL/VVD/VTX reading and assembly without Blender: synthetic files for every corner, every shared sample."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from conftest import sample_names, sample_path, samples_dir
from source_writer import (
    SBodyPart,
    SModel,
    SourceSpec,
    character_spec,
    quad_mesh,
    write_mdl,
    write_source,
    write_vvd,
)

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.binary import Cursor, owned_copy
from io_ms3d_mdl.formats.source import (
    find_sidecars,
    read_mdl,
    read_mdl_bytes,
    read_mesh_companions,
    read_vtx_bytes,
    read_vvd_bytes,
)
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions, _bone_world, source_to_scene


def load(path):
    """A model with its companions, beside it or (v53) inside it."""
    mdl = read_mdl(path)
    vvd, vtx, _ = read_mesh_companions(mdl, find_sidecars(str(path)))
    return mdl, vvd, vtx


def test_round_trip_of_every_part(tmp_path):
    mdl, vvd, vtx = load(write_source(character_spec(), tmp_path))
    assert (mdl.version, mdl.name, mdl.checksum) == (48, "test/model.mdl", 0x1234)
    assert mdl.bone_names == ["pelvis", "spine"] and mdl.bones["parent"].tolist() == [-1, 0]
    assert [(b.name, b.base, [m.name for m in b.models]) for b in mdl.body_parts] == [
        ("body", 1, ["body_ref.smd"]),
        ("hat", 1, ["", "hat_ref"]),
    ]
    assert mdl.body_parts[1].models[0].num_vertices == 0  # blank option
    assert mdl.textures == ["body", "body_red", "hat"] and mdl.cd_materials == ["models\\test\\"]
    assert mdl.skins.tolist() == [[0, 2], [1, 2]]
    assert mdl.include_models == ["models/test\\Test_Animations.mdl"]
    (att,) = mdl.attachments
    assert (att.name, att.bone) == ("eyes", 1) and att.matrix[0, 3] == pytest.approx(0.5)
    assert len(vvd.vertices) == 12 and vtx.header_size == 25 and vtx.checksum == mdl.checksum


def test_assembly(tmp_path):
    scene = source_to_scene(*load(write_source(character_spec(), tmp_path)), SourceOptions(scale=1.0))
    body, hat = scene.objects
    assert (body.name, hat.name) == ("body_ref", "hat_ref")
    assert body.mesh.triangles.tolist() == [[0, 1, 2], [0, 2, 3], [4, 5, 6], [4, 6, 7]]  # winding back to CCW
    np.testing.assert_allclose(body.mesh.positions[4:], [(0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)])
    np.testing.assert_allclose(body.mesh.uvs[:3], [(0, 1), (1, 1), (1, 0)])  # v = 1 - v
    assert body.mesh.material_refs == [0, 1] and body.mesh.materials == [0, 2]  # family 0: body, hat
    assert body.mesh.material_indices.tolist() == [0, 0, 1, 1]
    assert scene.skin_families == [[0, 2], [1, 2]]
    assert body.skin.bone_indices[:, 0].tolist() == [0] * 4 + [1] * 4 and (body.skin.bone_indices[:, 1:] == -1).all()
    parts = scene.collections
    assert [p.name for p in parts] == ["body", "hat"]
    assert [(c.name, c.hidden, c.objects) for c in parts[1].children] == [
        ("hat: blank 0", False, []),
        ("hat: hat_ref", True, [1]),
    ]
    assert [b.name for b in scene.skeleton.bones] == ["pelvis", "spine"]
    (eyes,) = scene.empties
    assert eyes.bone == "spine" and eyes.collection == "attachments"
    # spine: (0,0,2) world, turned 90° about Z: the attachment's local +0.5 X lands at world +0.5 Y
    np.testing.assert_allclose(eyes.matrix[:3, 3], (0.0, 0.5, 2.25), atol=1e-6)


@pytest.mark.parametrize("size", [25, 33])
@pytest.mark.parametrize("groups", [1, 3])
def test_strip_header_size_is_found_from_the_layout(tmp_path, size, groups):
    spec = character_spec(strip_header=size)
    spec.body_parts[0].models[0].meshes[0].strip_groups = groups
    spec.body_parts[0].models[0].meshes[0].triangles += [(0, 1, 3), (1, 2, 3)]
    mdl, vvd, vtx = load(write_source(spec, tmp_path))
    assert vtx.header_size == size
    body = source_to_scene(mdl, vvd, vtx).objects[0]
    assert len(body.mesh.positions) == 8 and len(body.mesh.triangles) == 6  # repeated vertices merged


def test_lod_fixups_are_replayed_for_vertices_and_tangents(tmp_path):
    spec = character_spec(shuffle_with_fixups=True)
    mdl, vvd, vtx = load(write_source(spec, tmp_path))
    raw = write_vvd(character_spec())
    plain = read_vvd_bytes(raw)
    np.testing.assert_array_equal(vvd.vertices["pos"], plain.vertices["pos"])
    assert vvd.tangents.shape == (12, 4)
    scene = source_to_scene(mdl, vvd, vtx, SourceOptions(scale=1.0))
    np.testing.assert_allclose(scene.objects[0].mesh.positions[0], (0, 0, 0))


def test_lod_choice_and_all_lods(tmp_path):
    parts = load(write_source(character_spec(vtx_lods=3), tmp_path))
    assert len(source_to_scene(*parts, SourceOptions(lod=2)).objects) == 2
    everything = source_to_scene(*parts, SourceOptions(lod=-1))
    assert [o.name for o in everything.objects] == [
        "body_ref",
        "body_ref_lod1",
        "body_ref_lod2",
        "hat_ref",
        "hat_ref_lod1",
        "hat_ref_lod2",
    ]
    lods = everything.collections[0].children[0].children
    assert [(c.name, c.hidden) for c in lods] == [("body: body_ref LOD1", True), ("body: body_ref LOD2", True)]


def test_only_the_built_level_of_detail_is_read(tmp_path):
    """An import reads one LOD of the .vtx (the others cost most of its reading); it is the LOD a full read
    gives, the rest are None, a LOD past the last reads the last, and the import builds what it built before."""
    path = write_source(character_spec(vtx_lods=3), tmp_path)
    raw = path.with_suffix(".dx90.vtx").read_bytes()
    full = read_vtx_bytes(raw)
    for lod, kept in ((0, 0), (1, 1), (2, 2), (7, 2)):
        part = read_vtx_bytes(raw, lod=lod)
        for full_models, models in zip(full.body_parts, part.body_parts, strict=True):
            for full_lods, lods in zip(full_models, models, strict=True):
                assert [k for k, level in enumerate(lods) if level is not None] == [kept]
                assert repr(lods[kept]) == repr(full_lods[kept])
    mdl = read_mdl(path)
    vvd, _, _ = read_mesh_companions(mdl, find_sidecars(str(path)))
    for lod in (0, 2, 5):
        expected = source_to_scene(mdl, vvd, full, SourceOptions(lod=lod))
        got = load_source(str(path), SourceOptions(lod=lod))
        assert [o.name for o in got.objects] == [o.name for o in expected.objects]
        for a, b in zip(got.objects, expected.objects, strict=True):
            np.testing.assert_array_equal(a.mesh.triangles, b.mesh.triangles)
            np.testing.assert_array_equal(a.mesh.positions, b.mesh.positions)
    with pytest.raises(ValueError, match="level of detail 1"):
        source_to_scene(mdl, vvd, read_vtx_bytes(raw, lod=0), SourceOptions(lod=1))


def test_material_slots_follow_first_use_and_survive_dropped_triangles(tmp_path):
    """Slots are the meshes' materials in order of first use (worked out per strip group); a material whose
    triangles are all degenerate loses its slot, and the remaining triangles keep theirs."""
    from source_writer import SMesh, SVertex

    verts = [SVertex((x, y, 0.0), (0, 0, 1), (x, y), (0,), (1.0,)) for x, y in ((0, 0), (1, 0), (1, 1), (0, 1))]
    meshes = [
        quad_mesh(1, 0.0, 0, strip_groups=2),
        SMesh(0, verts, [(0, 0, 1), (1, 2, 2)]),  # all degenerate
        SMesh(1, verts, [(0, 1, 2)]),
        SMesh(0, verts, [(3, 3, 0)]),  # degenerate too: material 0 is never used
        SMesh(2, verts, [(0, 1, 2), (0, 0, 3), (0, 2, 3)]),  # past the two textures: an empty slot
    ]
    spec = character_spec(body_parts=[SBodyPart("body", [SModel("body", meshes)])])
    scene = source_to_scene(*load(write_source(spec, tmp_path)), SourceOptions())
    (obj,) = scene.objects
    assert obj.mesh.material_refs == [1, 2]
    assert obj.mesh.materials == [scene.skin_families[0][1], None]
    assert obj.mesh.material_indices.dtype == np.int32
    assert obj.mesh.material_indices.tolist() == [0, 0, 0, 1, 1]
    assert scene.degenerate_triangles == 4 and scene.props["source_degenerate_triangles"] == 4
    assert not any("degenerate" in w for w in scene.warnings)  # counted, not warned about
    # A material whose first strip group loses all its triangles comes after one whose triangles come first.
    meshes = [SMesh(0, verts, [(0, 0, 1)]), SMesh(1, verts, [(0, 1, 2)]), SMesh(0, verts, [(0, 2, 3)])]
    spec = character_spec(body_parts=[SBodyPart("body", [SModel("body", meshes)])])
    (obj,) = source_to_scene(*load(write_source(spec, tmp_path / "late")), SourceOptions()).objects
    assert obj.mesh.material_refs == [1, 0]
    assert obj.mesh.material_indices.tolist() == [0, 1]


def test_missing_sidecars_keep_skeleton_and_attachments(tmp_path):
    path = tmp_path / "lonely.mdl"
    path.write_bytes(write_mdl(character_spec()))
    mdl, vvd, vtx = load(path)
    assert vvd is None and vtx is None
    scene = source_to_scene(mdl, vvd, vtx)
    assert scene.objects == [] and len(scene.skeleton.bones) == 2 and len(scene.empties) == 1
    assert any("missing" in w for w in scene.warnings)
    assert [c.name for c in scene.collections] == ["body", "hat"]


def test_checksum_mismatch_is_a_warning(tmp_path):
    scene = source_to_scene(*load(write_source(character_spec(vtx_checksum=99), tmp_path)))
    assert len(scene.objects) == 2 and any("checksum 99" in w for w in scene.warnings)


def test_single_bone_models_get_no_armature_unless_asked(tmp_path):
    spec = SourceSpec(body_parts=[SBodyPart("prop", [SModel("prop", [quad_mesh()])])])
    parts = load(write_source(spec, tmp_path))
    assert source_to_scene(*parts).skeleton is None
    assert len(source_to_scene(*parts, SourceOptions(armature_for_static_props=True)).skeleton.bones) == 1


def header_bytes(magic: bytes, version: int) -> bytes:
    return magic + struct.pack("<i", version) + bytes(400)


@pytest.mark.parametrize(
    "data, message",
    [
        (header_bytes(b"IDST", 10), "GoldSrc \\(Half-Life 1\\) model, version 10"),
        (header_bytes(b"IDSQ", 10), "GoldSrc \\(Half-Life 1\\) sequence group"),
        (
            header_bytes(b"IDST", 50),
            "MDL version 50 is not supported; this importer reads 44–49, 52, 53 and 2531",
        ),
        (header_bytes(b"IDST", 37), "MDL version 37 is not supported"),
        (header_bytes(b"DST1", 48), "mangled by GMAD"),
        (header_bytes(b"IDSV", 4), "a Source vertex file \\(.vvd\\), not a model"),
        (b"\x89PNG" + bytes(500), "expected the identifier 'IDST'"),
        (b"ID", "too short"),
    ],
)
def test_foreign_files_are_refused_by_name(data, message):
    with pytest.raises(FormatError, match=message):
        read_mdl_bytes(data, "x.mdl")


def test_corrupt_offsets_and_counts_are_format_errors():
    good = bytearray(write_mdl(character_spec()))
    for field, value in (("numbones", 10**6), ("boneindex", 10**8), ("numbodyparts", 7000), ("textureindex", -5)):
        from io_ms3d_mdl.formats.source.structs import STUDIOHDR

        data = bytearray(good)
        struct.pack_into("<i", data, STUDIOHDR.fields[field][1], value)
        with pytest.raises(FormatError):
            read_mdl_bytes(bytes(data), "bad.mdl")
    with pytest.raises(FormatError, match="vertex file"):
        read_vvd_bytes(b"IDSV" + struct.pack("<i", 5) + bytes(100), "bad.vvd")
    with pytest.raises(FormatError, match="version 6"):
        read_vtx_bytes(struct.pack("<i", 6) + bytes(60), "bad.vtx")


# --- every shared sample -----------------------------------------------------------------------------------------

# model: (version, bones, [(body part, base, [vertices per option at LOD0])], skins shape, VTX header size)
SAMPLES = {
    "Dynamic-src__Highpoly-Src-Props/models/props_junk/pushcart01a.mdl": (48, 1, [("Body", 1, [2407])], (1, 1), 25),
    "FJH03__CSCZS_GameData/models/shells/shell_9mm.mdl": (49, 1, [("studio", 1, [320])], (1, 1), 33),
    "Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl": (
        48,
        19,
        [
            ("default", 1, [9398]),
            ("head_01", 1, [0, 539]),
            ("head_02", 2, [0, 539]),
            ("head_03", 4, [0, 538]),
            ("head_04", 8, [0, 539]),
        ],
        (1, 4),
        25,
    ),
    "GoodFishMan__mercenaries/models/player/scout.mdl": (48, 78, [("scout", 1, [7457])], (4, 18), 25),
    "Igrium__portal_nrtx/models/props/metal_box.mdl": (49, 1, [("body", 1, [5364])], (3, 3), 33),
    "Igrium__portal_nrtx/models/props_pipes/pipe02_45degree01.mdl": (44, 1, [("Body", 1, [149])], (3, 3), 25),
    "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl": (
        48,
        59,
        [("head", 1, [2611]), ("body", 1, [2117]), ("hands", 1, [476]), ("money", 1, [0, 336])],
        (8, 22),
        25,
    ),
    "Lambdagon__lambdas-weapon-pack/models/player/civilian_animations.mdl": (48, 60, [], (1, 0), None),
    "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl": (48, 56, [], (1, 0), None),
    "icewind1991__vmdl/data/barrel01.mdl": (46, 1, [("Body", 1, [674])], (1, 1), 25),
    "siobhan-saoirse__l4d-nextbots/models/ghostanim.mdl": (48, 3, [("ghostAnim", 1, [48])], (1, 1), 25),
    # coverage/: a v44 ragdoll, CS:GO-era frame animations, Titanfall 2 (all embedded) and Titanfall
    # (1799 pool vertices used, and copies for two double-sided triangles' back faces)
    "CombineFodder__hl2betaplayermodels/models/player/cremator.mdl": (44, 25, [("Soldier", 1, [1805])], (1, 8), 25),
    "NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped.mdl": (
        49,
        47,
        [("studio", 1, [8815]), ("studio", 1, [1429]), ("studio", 1, [147])],
        (1, 7),
        33,
    ),
    "Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl": (
        53,
        1,
        [("body", 1, [24])],
        (1, 1),
        33,
    ),
    "r1delta__CORE/models/rocks/single_rock_01.mdl": (52, 1, [("body", 1, [119])], (1, 1), 33),
}


def test_every_shared_source_model_is_covered():
    assert sample_names("source", "*.mdl") == set(SAMPLES)


@pytest.mark.parametrize("relative", sorted(SAMPLES))
def test_shared_source_models(relative):
    path = sample_path("source", relative)
    mdl, vvd, vtx = load(path)
    version, bones, parts, skins, header_size = SAMPLES[relative]
    assert (mdl.version, len(mdl.bones), mdl.skins.shape) == (version, bones, skins)
    assert (vtx.header_size if vtx else None) == header_size
    scene = source_to_scene(mdl, vvd, vtx)
    got = []
    for part in scene.collections:
        counts = [sum(len(scene.objects[i].mesh.positions) for i in option.objects) for option in part.children]
        got.append((part.name, part.props["source_bodypart_base"], counts))
    assert got == parts
    assert not [w for w in scene.warnings if "checksum" in w or "missing" in w]
    # the rest pose is the inverse of the stored poseToBone matrices (notes §1.4)
    world = _bone_world(mdl)
    pose_to_bone = np.zeros((len(world), 4, 4))
    pose_to_bone[:, :3], pose_to_bone[:, 3, 3] = mdl.bones["posetobone"], 1.0
    size = max(float(np.ptp(world[:, :3, 3], axis=0).max()), 1.0)
    np.testing.assert_allclose(np.linalg.inv(pose_to_bone), world, atol=1e-4 * size)


def test_case_insensitive_sidecars():
    sidecars = find_sidecars(
        str(samples_dir() / "source/Dynamic-src__Highpoly-Src-Props/models/props_junk/pushcart01a.mdl")
    )
    assert sidecars.vtx.endswith("PushCart01a.dx90.vtx") and sidecars.phy.endswith("PushCart01a.phy")
    assert sidecars.vvd.endswith("pushcart01a.vvd")


def test_records_copied_as_bytes_equal_numpy_copies_and_own_their_memory():
    """Readers copy records as bytes (numpy copies structured records field by field, 25× slower); the copies
    must be numpy's own, writable, and independent of the file's bytes, for any layout."""
    data = bytes(np.random.default_rng(3).integers(0, 256, 48 * 7, dtype=np.uint8))
    cur = Cursor(data)
    layouts = ((S.VVD_VERTEX, 7), (np.dtype(("<f4", 4)), 21), (np.dtype("<u2"), 0), (S.VVD_VERTEX, 1))
    for dtype, count in (*layouts, (np.dtype(("<f4", 4)), 0), (S.VVD_VERTEX, 0)):
        view = cur.view_at(dtype, 0, count, "records")
        for copy in (cur.array_at(dtype, 0, count, "records"), owned_copy(view)):
            assert copy.dtype == view.dtype and copy.shape == view.shape
            assert copy.tobytes() == view.tobytes()
            assert copy.flags.writeable and not np.shares_memory(copy, view)
    strided = np.frombuffer(data, S.VVD_VERTEX)[::2]
    assert owned_copy(strided).tobytes() == strided.copy().tobytes()
    cur.pos = 0
    assert cur.array(S.VVD_VERTEX, 3, "records").tobytes() == data[: 3 * 48]


def test_a_model_without_vertices_keeps_its_skeleton(tmp_path):
    """A bone-only model still has a .vvd with no vertices (and, from studiomdl, a tangent offset): it imports its
    skeleton and no mesh, never an internal error."""
    spec = character_spec(body_parts=[SBodyPart("body", [SModel("")])], includes=[])
    path = write_source(spec, tmp_path / "models")
    vvd = read_vvd_bytes((tmp_path / "models" / (path.stem + ".vvd")).read_bytes())
    assert len(vvd.vertices) == 0 and vvd.tangents is not None and vvd.tangents.shape == (0, 4)
    scene = load_source(str(path))
    assert scene.objects == [] and scene.skeleton is not None and len(scene.skeleton.bones) == 2


def test_strings_read_in_place_equal_those_read_through_a_copy():
    """Names are looked for in the file's bytes without copying ``limit`` bytes each time; every case (terminated,
    unterminated, at the end, past the limit, offset 0) reads, and is charged to the budget, as through a copy."""
    data = b"\x00name\x00caf\xe9\x00" + "ünï".encode() + b"\x00tail-without-end"
    cases = [(0, 4096), (1, 4096), (6, 4096), (11, 4096), (18, 4096), (1, 3), (18, 5), (len(data) - 1, 4096)]
    for offset, limit in cases:
        fast, slow = Cursor(data), Cursor(bytearray(data))
        assert fast.string_at(offset, "s", limit) == slow.string_at(offset, "s", limit), (offset, limit)
        assert fast.copied == slow.copied, (offset, limit)
    with pytest.raises(FormatError, match="outside the 33-byte file"):
        Cursor(data).string_at(len(data), "s")


def test_each_real_level_of_detail_reads_alone_as_in_a_full_read():
    """civilian's six LODs differ (the synthetic writer repeats LOD 0): each read alone has the same strip groups,
    vertices and triangles as the full read's, and an import at each LOD builds the same meshes."""
    path = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    raw = path.with_suffix(".dx90.vtx").read_bytes()
    full = read_vtx_bytes(raw)
    mdl = read_mdl(path)
    vvd, _, _ = read_mesh_companions(mdl, find_sidecars(str(path)))
    triangles_per_lod = []
    for lod in range(full.num_lods):
        alone = read_vtx_bytes(raw, lod=lod)
        for full_models, models in zip(full.body_parts, alone.body_parts, strict=True):
            for full_lods, lods in zip(full_models, models, strict=True):
                kept = min(lod, len(full_lods) - 1)
                assert [k for k, level in enumerate(lods) if level is not None] == [kept]
                for a, b in zip(full_lods[kept].meshes, lods[kept].meshes, strict=True):
                    for ga, gb in zip(a.strip_groups, b.strip_groups, strict=True):
                        np.testing.assert_array_equal(ga.vertices, gb.vertices)
                        np.testing.assert_array_equal(ga.triangles, gb.triangles)
        options = SourceOptions(import_animations=False, import_physics=False, lod=lod)
        got, expected = load_source(str(path), options).objects, source_to_scene(mdl, vvd, full, options).objects
        for a, b in zip(got, expected, strict=True):
            np.testing.assert_array_equal(a.mesh.triangles, b.mesh.triangles)
            np.testing.assert_array_equal(a.mesh.positions, b.mesh.positions)
        triangles_per_lod.append(sum(len(o.mesh.triangles) for o in got))
    assert len(set(triangles_per_lod)) > 1  # the levels really differ
