"""Titanfall models: v52 (44–49 records, ``.dx11.vtx``, ``.vvc`` colours) and v53 (its own header, bones,
textures and animation descriptors, with the sidecars embedded in the ``.mdl``). Written fixtures must assemble
exactly like their v48 twins; the real samples are checked against counts read here from their raw bytes."""

from __future__ import annotations

import json
import struct
import time

import numpy as np
import pytest
from conftest import bpy, samples_dir
from source_writer import SAnimation, SNode, character_spec, write_mdl, write_source

from io_ms3d_mdl.errors import FormatError
from io_ms3d_mdl.formats.source import read_mdl, read_mdl_bytes
from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.animation import decode_animation
from io_ms3d_mdl.formats.source.mdl import embedded_bytes
from io_ms3d_mdl.scene.from_source import SourceOptions
from io_ms3d_mdl.scene.load import load_source

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
    assert any("vertex colours of the .vvc (12 vertices)" in w for w in scene.warnings)
    mdl = read_mdl(path)
    assert mdl.version == 52 and mdl.skins.tolist() == [[0, 2], [1, 2]]
    ours, theirs = decode_animation(mdl, 0), decode_animation(read_mdl(tmp_path / "v48" / "guy.mdl"), 0)
    np.testing.assert_array_equal(ours.rotations, theirs.rotations)
    np.testing.assert_allclose(ours.positions[:, 1], [(1, 2, 3)] * 5)


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
    twin = load_source(str(write_source(spec_of(48), tmp_path / "v48", "guy")))
    scene = load_source(str(path))
    same_meshes(scene, twin)
    assert [b.name for b in scene.skeleton.bones] == ["pelvis", "spine"]
    for ours, theirs in zip(scene.skeleton.bones, twin.skeleton.bones, strict=True):
        np.testing.assert_allclose(ours.matrix, theirs.matrix, atol=1e-6)
    assert [m.name for m in scene.materials] == [m.name for m in twin.materials]
    # Respawn's animation format is not decoded: said once, by name, and nothing wrong is built
    assert mdl.animations == [] and not scene.actions
    skipped = [w for w in scene.warnings if "Titanfall 2 (MDL v53) animations are not imported" in w]
    assert len(skipped) == 1 and "'walk'" in skipped[0]


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


@pytest.mark.parametrize("version", [43, 50, 51, 54, 2531])
def test_versions_outside_the_range_are_refused_by_name(version):
    data = b"IDST" + struct.pack("<i", version) + bytes(800)
    with pytest.raises(FormatError) as caught:
        read_mdl_bytes(data, "x.mdl")
    assert caught.value.reason == f"MDL version {version} is not supported; this importer reads 44–49, 52 and 53"
    assert caught.value.offset == 4


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
    assert any("'@ref'" in w and "not imported" in w for w in scene.warnings)


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


# --- hostile input ----------------------------------------------------------------------------------------------


def check_embedded(parts: dict[str, bytes]):
    """The v53 path of ``load_source`` on bytes: the model, then the sidecars its header says it holds."""
    from io_ms3d_mdl.formats.source.sidecars import Sidecars, read_mesh_companions
    from io_ms3d_mdl.scene.from_source import source_to_scene

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
