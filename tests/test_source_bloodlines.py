"""Bloodlines models (MDL 2531, VTX 107) without Blender: every shared 2531 sample and a handful of models from a
local fetch of the Unofficial Patch's repository, checked against the independent reading of
``bloodlines_reference`` (triangles, vertex positions, weights, rest pose); synthetic files of the same layout for
the hostile corners and the three vertex layouts."""

from __future__ import annotations

import math
import os
import struct
import subprocess
from pathlib import Path

import bloodlines_reference as ref
import hostile
import numpy as np
import pytest
from bloodlines_writer import (
    character_spec2531,
    prop_spec,
    tth_pair,
    write_bloodlines,
    write_mdl2531,
    write_vtx107,
)
from conftest import ROOT, samples_dir

from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.source import find_sidecars, read_mdl, read_mdl_bytes, read_mesh_companions, read_vtx_bytes
from io_ms3d_mdl.formats.source.animation import decode_animation, decode_animations
from io_ms3d_mdl.formats.source.tth import tth_to_vtf
from io_ms3d_mdl.scene.load import load_source, load_source_animation
from io_ms3d_mdl.scene.source.convert import SourceOptions, _bone_world

SHARED = [
    "character/npc/common/citizen/female3/female_citizen_3.mdl",
    "character/npc/common/swat/swat3.mdl",
    "items/garys_film/ground/garys_film.mdl",
    "items/diary/ground/diari.mdl",
    "character/npc/common/doppleganger/doppleganger_female.mdl",
]
REPO = "miracleflame+VTMB-Unofficial-Patch-by-Wesp"
# From a local fetch (never committed): a character with physics, one without VTX, a weapon, a static prop of
# skinned floats with physics, 16-bit vertices with only .dx80.vtx, 16-bit with both VTX, 8-bit with physics.
FETCHED = [
    "Basic_Patch/models/character/npc/common/justblood/justblood.mdl",
    "Basic_Patch/models/character/npc/common/cabbie/cabbie.mdl",
    "Basic_Patch/models/weapons/holylight/wield/w_f_holylight.mdl",
    "Basic_Patch/models/scenery/furniture/fancybed/fancybed2.mdl",
    "Basic_Patch/models/scenery/structural/malkavian/malkmazedrc.mdl",
    "Basic_Patch/models/scenery/structural/warrens/warr_00_map.mdl",
    "Basic_Patch/models/scenery/misc/plates/plate4.mdl",
    "Basic_Patch/models/weapons/handleclaws/wield/w_m_handleclaws.mdl",  # with its VMTs and .tth/.ttz textures
]
MATERIALS = ["Basic_Patch/materials/models/weapons/handleclaws/"]
ONE = SourceOptions(scale=1.0, find_materials=False)
WITH_BOXES = SourceOptions(scale=1.0, find_materials=False, import_hitboxes=True)


def shared_model(relative: str) -> Path:
    return samples_dir() / "vtmb" / "miracleflame__VTMB-Unofficial-Patch-by-Wesp" / "Basic_Patch" / "models" / relative


def mirror() -> Path:
    """The fetched repository (a bare git directory); the tests that need it skip, saying so, when it is absent."""
    where = Path(os.environ.get("IO_MS3D_MDL_MIRROR", ROOT.parent / ".mirror")) / REPO / "repo"
    if not where.is_dir():
        pytest.skip(f"the Bloodlines repository is not fetched ({REPO}; set IO_MS3D_MDL_MIRROR)")
    return where


@pytest.fixture(scope="module")
def fetched(tmp_path_factory) -> Path:
    """The FETCHED models with their companions, copied out of the fetch into a temporary game folder."""
    repo = mirror()
    out = tmp_path_factory.mktemp("vtmb")
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for model in FETCHED + MATERIALS:
        stem = model[:-4] + "." if model.endswith(".mdl") else model
        for name in (n for n in names if n.startswith(stem)):
            blob = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name}"], capture_output=True, check=True)
            target = out / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(blob.stdout)
    return out


def every_model(fetched_root: Path | None) -> list[Path]:
    paths = [shared_model(r) for r in SHARED]
    if fetched_root is not None:
        paths += [fetched_root / r for r in FETCHED]
    return paths


def _vtx_bytes(path: Path) -> bytes | None:
    sidecars = find_sidecars(str(path))
    return Path(sidecars.vtx).read_bytes() if sidecars.vtx else None


def check_against_reference(path: Path) -> int:
    """Triangles, positions and weights of every model option, and the bones' rest positions; the triangle count."""
    data = path.read_bytes()
    vtx = _vtx_bytes(path)
    scene = load_source(str(path), ONE)
    refs = ref.models(data, vtx)
    firsts = np.cumsum([0] + [len(r.positions) for r in refs])
    meshes = {
        (o.props["source_bodypart"], o.props["source_option"]): o
        for o in scene.objects
        if o.mesh is not None and "source_option" in o.props and o.props.get("source_lod", 0) == 0
    }
    triangles = 0
    for r, first in zip(refs, firsts.tolist(), strict=False):
        obj = meshes.get((r.part, r.option))
        if vtx is None or not len(r.triangles):
            assert obj is None
            continue
        local = obj.mesh.source_vertices.astype(np.int64) - first
        assert local.min() >= 0 and local.max() < len(r.positions)
        np.testing.assert_allclose(obj.mesh.positions, r.positions[local], atol=1e-4)
        ours = local[obj.mesh.triangles]
        theirs = r.triangles[(r.triangles[:, 0] != r.triangles[:, 1]) & (r.triangles[:, 1] != r.triangles[:, 2])]
        theirs = theirs[theirs[:, 0] != theirs[:, 2]]  # degenerate ones are skipped, with a warning
        np.testing.assert_array_equal(ref.canonical(ours), ref.canonical(theirs))
        triangles += len(ours)
        if r.weights is not None and obj.skin is not None:
            dense_ours = np.zeros((len(local), len(scene.skeleton.bones)))
            np.add.at(
                dense_ours, (np.arange(len(local))[:, None], np.maximum(obj.skin.bone_indices, 0)), obj.skin.weights
            )
            dense_ref = np.zeros_like(dense_ours)
            np.add.at(dense_ref, (np.arange(len(local))[:, None], r.bones[local]), r.weights[local])
            np.testing.assert_allclose(dense_ours, dense_ref, atol=1e-6)
    if scene.skeleton is not None:
        heads = np.array([b.matrix[:3, 3] for b in scene.skeleton.bones])
        np.testing.assert_allclose(heads, ref.rest_pose(data)[:, :3, 3], atol=1e-3)
    return triangles


@pytest.mark.parametrize("relative", SHARED)
def test_shared_samples_match_the_reference(relative):
    path = shared_model(relative)
    triangles = check_against_reference(path)
    if _vtx_bytes(path) is not None:
        assert triangles > 0


def test_fetched_models_match_the_reference(fetched):
    counts = {p.name: check_against_reference(p) for p in every_model(fetched)[len(SHARED) :]}
    assert counts["cabbie.mdl"] == 0  # no VTX: skeleton only
    assert all(n > 0 for name, n in counts.items() if name != "cabbie.mdl"), counts


@pytest.mark.parametrize("relative", SHARED[:2] + SHARED[4:])
def test_bind_pose_is_the_inverse_of_pose_to_bone(relative):
    """The rest pose the armature gets is where the vertices were skinned; where the stored pose agrees (all but
    the doppelganger's two teeth bones), it is the stored pose too: rotations as the quaternions say."""
    path = shared_model(relative)
    data = path.read_bytes()
    world = _bone_world(read_mdl(path))
    np.testing.assert_allclose(world, ref.rest_pose(data), atol=1e-4)
    stored = ref.stored_rest_pose(data)
    differs = np.abs(stored - ref.rest_pose(data)).max(axis=(1, 2)) > 1e-3
    assert int(differs.sum()) == (2 if "doppleganger" in relative else 0)


def test_character_reads_body_parts_skins_attachments_hitboxes_physics():
    path = shared_model(SHARED[0])
    mdl = read_mdl(path)
    assert mdl.version == 2531 and len(mdl.bones) == 77
    assert [bp.name for bp in mdl.body_parts] == ["mainbody"]
    assert mdl.skins.shape == (1, 11) and mdl.textures[0] == "femcitizen3body"
    assert "models/character/teeth/" in mdl.cd_materials
    assert [a.name for a in mdl.attachments] == ["0", "mouth", "eyes"]
    assert len(mdl.hitbox_sets["default"]) == 19
    scene = load_source(str(path), WITH_BOXES)
    assert scene.skeleton is not None and len(scene.skeleton.bones) == 77
    assert len(scene.empties) >= 3 + 19  # attachments and hit boxes
    physics = [o for o in scene.objects if o.name.endswith("_PHY") or o.props.get("source_physics_solid") is not None]
    assert physics or any("phy" in c.name.lower() for c in scene.collections)


def test_without_vtx_the_skeleton_comes_with_a_warning():
    scene = load_source(str(shared_model(SHARED[4])), ONE)
    assert scene.skeleton is not None and len(scene.skeleton.bones) == 69
    assert not [o for o in scene.objects if o.mesh is not None and "source_option" in o.props]
    assert any(".vtx file is missing" in w for w in scene.warnings)
    assert any("teeth" in w and "poseToBone" in w for w in scene.warnings)


def _angles_to_geometry(mesh) -> np.ndarray:
    """Degrees between each vertex's stored normal and the area-weighted normal of the triangles using it (the
    vertices no triangle with an area uses left out)."""
    p = mesh.positions.astype(np.float64)
    tris = mesh.triangles
    face = np.cross(p[tris[:, 1]] - p[tris[:, 0]], p[tris[:, 2]] - p[tris[:, 0]])
    summed = np.zeros_like(p)
    for k in range(3):
        np.add.at(summed, tris[:, k], face)
    length = np.linalg.norm(summed, axis=1)
    used = length > 1e-9
    geometric = summed[used] / length[used, None]
    return np.degrees(np.arccos(np.clip((geometric * mesh.vertex_normals[used]).sum(1), -1, 1)))


def test_compressed_prop_positions_uvs_and_normals():
    """The compressed layout's normal byte, decoded through the 202-entry table, agrees with the geometry: this box
    of a diary has a vertex per face corner, and the median decoded normal is within 2° of its face's."""
    path = shared_model(SHARED[3])
    scene = load_source(str(path), ONE)
    (obj,) = [o for o in scene.objects if o.mesh is not None and "source_option" in o.props]
    assert float(np.median(_angles_to_geometry(obj.mesh))) < 2.0
    hull = np.frombuffer(path.read_bytes(), "<f4", 6, 180).reshape(2, 3)
    np.testing.assert_allclose(obj.mesh.positions.min(0), hull[0], atol=2e-3)
    np.testing.assert_allclose(obj.mesh.positions.max(0), hull[1], atol=2e-3)
    assert obj.mesh.uvs.min() >= 0.0 and obj.mesh.uvs.max() <= 1.0
    assert scene.skeleton is None  # one bone: a static prop


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_synthetic_props_of_each_vertex_layout(tmp_path, kind):
    spec = prop_spec(kind)
    if kind:
        spec.normal_codes = np.array([c for c, *_ in EXPECTED_NORMALS[kind]])[np.arange(len(spec.positions)) % 4]
    path = write_bloodlines(spec, tmp_path / "models" / "test", f"box{kind}")
    scene = load_source(str(path), ONE)
    (obj,) = [o for o in scene.objects if o.mesh is not None]
    assert len(obj.mesh.triangles) == 12
    tolerance = {0: 1e-6, 1: 1e-3, 2: 8 / 255}[kind]
    np.testing.assert_allclose(obj.mesh.positions, spec.positions[obj.mesh.source_vertices], atol=tolerance)
    ours = ref.canonical(obj.mesh.source_vertices[obj.mesh.triangles])
    np.testing.assert_array_equal(ours, ref.canonical(spec.triangles[:, ::-1]))
    if kind:
        expected = np.array(EXPECTED_NORMALS[kind])[:, 1:]
        np.testing.assert_allclose(obj.mesh.vertex_normals, expected[obj.mesh.source_vertices % 4], atol=1e-6)


# Normal codes and the directions they name, from the layout facts (directions2531): rings of latitude from -Z, each
# starting at +X and turning towards +Y. Bytes: rings 15° apart (ring 1: 8 entries from code 1). Words (byte
# offsets of 12-byte entries): rings 180°/64 apart, the 128-entry equator from entry 2,593, +Z the last (5,313).
_S15, _C15 = math.sin(math.radians(15)), math.cos(math.radians(15))
EXPECTED_NORMALS = {
    2: [(0, 0, 0, -1), (1, _S15, 0, -_C15), (3, 0, _S15, -_C15), (201, 0, 0, 1)],
    1: [(0, 0, 0, -1), (12 * 2593, 1, 0, 0), (12 * (2593 + 32), 0, 1, 0), (12 * 5313, 0, 0, 1)],
}


def test_synthetic_character_skeleton_weights_attachment_hitbox(tmp_path):
    spec = character_spec2531()
    path = write_bloodlines(spec, tmp_path / "models" / "test", "guy")
    scene = load_source(str(path), WITH_BOXES)
    assert [b.name for b in scene.skeleton.bones] == ["root", "spine", "head"]
    np.testing.assert_allclose(scene.skeleton.bones[2].matrix[:3, 3], (0.0, 8.0, 10.0), atol=1e-5)
    (obj,) = [o for o in scene.objects if o.mesh is not None]
    owners = spec.bone_of_vertex[obj.mesh.source_vertices]
    np.testing.assert_array_equal(obj.skin.bone_indices[:, 0], owners)
    np.testing.assert_allclose(obj.skin.weights[:, 0], 1.0)
    assert (obj.skin.bone_indices[:, 1:] == -1).all()
    names = {e.name for e in scene.empties}
    assert "eyes" in names and len(scene.empties) >= 2


def test_version_error_names_2531(tmp_path):
    data = bytearray(write_mdl2531(prop_spec()))
    struct.pack_into("<i", data, 4, 2530)
    with pytest.raises(FormatError, match="2531"):
        read_mdl_bytes(bytes(data), "x.mdl")


@pytest.mark.parametrize(
    ("where", "value", "expected"),
    [
        (244, 10**8, "bones"),  # bone table past the end
        (324, -(10**6), "body parts"),
        ("vertexlisttype", 7, "vertex list type 7"),
        ("vertexindex", 10**7, "vertices of model 0"),
        ("meshvertices", 10**4, "holds vertices"),
        ("parent", 5, "parents must come first"),
    ],
)
def test_hostile_files_fail_with_a_clear_error(where, value, expected):
    data = bytearray(write_mdl2531(character_spec2531()))
    bp = struct.unpack_from("<i", data, 324)[0]
    model = bp + struct.unpack_from("<i", data, bp + 12)[0]
    mesh = model + struct.unpack_from("<i", data, model + 140)[0]
    at = {
        "vertexlisttype": model + 156,
        "vertexindex": model + 148,
        "meshvertices": mesh + 8,
        "parent": struct.unpack_from("<i", data, 244)[0] + 160 + 4,
    }.get(where, where)
    struct.pack_into("<i", data, at, value)
    with pytest.raises(FormatError, match=expected) as info:
        mdl = read_mdl_bytes(bytes(data), "hostile.mdl")
        read_mesh_companions(mdl, find_sidecars("hostile.mdl"))
    assert "hostile.mdl" in str(info.value)


def test_hostile_vtx_index_past_its_group(tmp_path):
    spec = prop_spec()
    data = bytearray(write_vtx107(spec))
    # the last index of the only strip group names a vertex the group does not have
    struct.pack_into("<H", data, len(data) - 2, 999)
    with pytest.raises(FormatError, match="beyond the group"):
        read_vtx_bytes(bytes(data), "box.dx80.vtx")


def test_info_reports_version_and_companions():
    from io_ms3d_mdl.cli.info import mdl_info

    info = mdl_info(str(shared_model(SHARED[1])))
    assert info["version"] == 2531
    assert info["companions"]["vtx"].endswith(".dx80.vtx") and info["companions"]["vvd"] is None
    assert info["physics"]["solids"] > 0


def test_fetched_weapon_textures_come_from_tth_and_ttz(fetched):
    scene = load_source(str(fetched / FETCHED[-1]))
    textured = {m.name: m.base_texture for m in scene.materials if m.base_texture is not None}
    claws = textured["handleclaws"]
    assert claws.resolved_path.endswith("handleclaws.tth")
    assert claws.blocks is not None and (claws.blocks.width, claws.blocks.height) == (512, 512)
    assert not [w for w in scene.warnings if "texture" in w]


def test_synthetic_tth_texture_decodes(tmp_path):
    game = tmp_path / "game"
    path = write_bloodlines(prop_spec(0), game / "models" / "test", "box")
    folder = game / "materials" / "models" / "test"
    folder.mkdir(parents=True)
    (folder / "skin.vmt").write_text('VertexLitGeneric\n{\n"$basetexture" "models\\test\\skin"\n}\n')
    tth, ttz = tth_pair(hostile.vtf(8, 8, fill=b"\xff\x00\x00\xff"), 80 + 4)
    (folder / "skin.tth").write_bytes(tth)
    (folder / "skin.ttz").write_bytes(ttz)
    scene = load_source(str(path))
    (material,) = scene.materials
    pixels = material.base_texture.pixels
    assert pixels.shape == (8, 8, 4) and (pixels[..., 0] == 255).all() and (pixels[..., 1] == 0).all()


def test_tth_bomb_and_damage_fail_clearly():
    vtf = hostile.vtf(64, 64)
    tth, ttz = tth_pair(vtf, 80)
    assert tth_to_vtf(tth, ttz, "t.tth") == vtf
    with using_budget(Budget(scale=1e-5)), pytest.raises(BudgetExceeded, match="decompressed texture"):
        tth_to_vtf(tth, ttz, "t.tth")
    with pytest.raises(FormatError, match="damaged") as info:
        tth_to_vtf(tth, ttz[:10] + b"garbage", "t.tth")
    assert "t.ttz" in str(info.value)
    with pytest.raises(FormatError, match="TTH"):
        tth_to_vtf(b"VTF\0" + bytes(40), ttz, "t.tth")
    with pytest.raises(FormatError, match=r"t\.tth"):
        tth_to_vtf(tth[:30], ttz, "t.tth")


@pytest.mark.parametrize("relative", SHARED[:2] + SHARED[4:])
def test_first_frames_match_the_test_decoder(relative):
    path = shared_model(relative)
    mdl = read_mdl(path)
    data = path.read_bytes()
    assert mdl.animations
    for index in range(min(len(mdl.animations), 3)):
        decoded = decode_animation(mdl, index)
        positions, rotations = ref.first_frame(data, index)
        np.testing.assert_allclose(decoded.positions[0], positions, atol=1e-4)
        wxyz = rotations[:, [3, 0, 1, 2]]
        wxyz /= np.linalg.norm(wxyz, axis=1, keepdims=True)
        np.testing.assert_allclose(np.abs(np.einsum("bi,bi->b", decoded.rotations[0], wxyz)), 1.0, atol=1e-6)
        assert decoded.rotations.shape == (mdl.animations[index].num_frames, len(mdl.bones), 4)


def test_animations_decoded_together_equal_each_decoded_alone_and_damage_stays_with_its_own():
    """The model's animations are decoded in one pass (their value streams walked together); each equals its
    decode alone, and a stream pointing past the end fails only its own animation, with the error it has alone."""
    data = bytearray(shared_model(SHARED[1]).read_bytes())
    mdl = read_mdl_bytes(bytes(data), "swat3.mdl")
    together = decode_animations(mdl, list(range(len(mdl.animations))))
    for index, decoded in enumerate(together):
        alone = decode_animation(mdl, index)
        assert decoded.name == alone.name and decoded.fps == alone.fps
        for a, b in ((decoded.positions, alone.positions), (decoded.rotations, alone.rotations)):
            assert a.tobytes() == b.tobytes()
    anim = mdl.animations[2]
    entry = anim.offset + anim.anim_index + 32 * 5  # bone 5's entry: a float, then seven stream offsets
    struct.pack_into("<i", data, entry + 4, len(data))
    damaged = read_mdl_bytes(bytes(data), "swat3.mdl")
    results = decode_animations(damaged, list(range(len(mdl.animations))))
    assert isinstance(results[2], FormatError) and "past the end" in str(results[2])
    with pytest.raises(FormatError) as alone:
        decode_animation(damaged, 2)
    assert str(alone.value) == str(results[2])
    for index in (0, 1, 3):
        assert results[index].positions.tobytes() == together[index].positions.tobytes()


def test_animations_build_as_actions_and_on_demand():
    path = str(shared_model(SHARED[1]))
    scene = load_source(path, SourceOptions(scale=1.0, find_materials=False, animations="ALL"))
    assert [a.name for a in scene.animations] == ["@ragdoll", "@repel_into", "@repel_loop", "@repel_outof"]
    assert scene.actions and all(a.channels for a in scene.actions)
    one = load_source_animation(path, "@repel_loop", SourceOptions(scale=1.0, find_materials=False), 30.0)
    (action,) = one.actions
    assert action.frame_range[1] - action.frame_range[0] == 41


def test_synthetic_animation_and_fuzz_seeds_import(tmp_path):
    import fuzz_seeds

    path = fuzz_seeds.bloodlines_character(tmp_path / "a")
    mdl = read_mdl(path)
    decoded = decode_animation(mdl, 0)
    np.testing.assert_allclose(decoded.positions[:, 0, 0], np.arange(12) / 256, atol=1e-6)
    np.testing.assert_allclose(decoded.rotations[:, 2], [[1.0, 0.0, 0.0, 0.0]] * 12, atol=1e-6)
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["slide"]
    prop = load_source(str(fuzz_seeds.bloodlines_textured_prop(tmp_path / "b")))
    assert prop.materials[0].base_texture.pixels.shape == (16, 16, 4)


def test_sequences_name_their_animation_and_activity():
    mdl = read_mdl(shared_model(SHARED[1]))
    assert [(q.name, q.activity, q.animations) for q in mdl.sequences] == [
        ("ragdoll", "ACT_DIERAGDOLL", [0]),
        ("repel_into", "ACT_SWAT_REPEL_INTO", [1]),
        ("repel_loop", "ACT_SWAT_REPEL_LOOP", [2]),
        ("repel_outof", "ACT_SWAT_REPEL_OUTOF", [3]),
    ]


def test_animation_only_model_imports_as_an_armature_with_actions(tmp_path):
    spec = character_spec2531()
    spec.positions, spec.triangles = np.zeros((0, 3)), np.zeros((0, 3), int)
    spec.uvs, spec.bone_of_vertex = np.zeros((0, 2)), np.zeros(0, int)
    path = write_bloodlines(spec, tmp_path / "models" / "test", "sequences", vtx=False)
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert scene.skeleton is not None and [a.name for a in scene.actions] == ["slide"]
    assert not [o for o in scene.objects if o.mesh is not None]
    assert not [w for w in scene.warnings if "missing" in w]


def test_stored_vertices_count_against_the_vertex_budget(tmp_path):
    class FourVertices(Budget):
        vertices = property(lambda self: 4)

    data = write_mdl2531(prop_spec(2))
    with using_budget(FourVertices()), pytest.raises(BudgetExceeded, match="vertices stored"):
        read_mdl_bytes(data, "crate.mdl")  # 8 vertices against a budget of 4


@pytest.mark.parametrize("relative", SHARED[:2])
def test_winding_agrees_with_the_stored_normals(relative):
    """Triangles come out counter-clockwise about the file's own vertex normals (the file's are clockwise)."""
    scene = load_source(str(shared_model(relative)), ONE)
    (obj,) = [o for o in scene.objects if o.mesh is not None and "source_option" in o.props]
    p, t = obj.mesh.positions.astype(np.float64), obj.mesh.triangles
    face = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    along = np.einsum("ti,ti->t", face, obj.mesh.vertex_normals[t].sum(axis=1))
    assert (along > 0).mean() > 0.95


@pytest.mark.parametrize(("kind", "code"), [(1, 13), (1, 12 * 5314), (2, 202)])
def test_a_normal_code_that_names_no_direction_is_refused(tmp_path, kind, code):
    """A quantised vertex's normal code past its table (or, for the 16-bit kind, not the byte offset of an entry)
    is refused with the vertex and where its code is, not read as some other direction."""
    spec = prop_spec(kind)
    spec.normal_codes = np.full(len(spec.positions), code)
    path = write_bloodlines(spec, tmp_path / "models" / "test", "box")
    with pytest.raises(FormatError, match=f"vertex 0 of .* has normal code {code}, which names no direction"):
        read_mdl(str(path))
