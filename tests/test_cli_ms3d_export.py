"""``io-ms3d-mdl convert MODEL -o OUT.ms3d``: straight from the scene description, no Blender. A MilkShape file
comes back as the export of its import; a Source model becomes a MilkShape file Assimp reads with our counts."""

from __future__ import annotations

import pytest
from conftest import sample_path
from no_bpy import without_bpy

from io_ms3d_mdl.cli import main
from io_ms3d_mdl.formats.ms3d.reader import read_ms3d
from io_ms3d_mdl.scene.load import load_ms3d, load_source
from io_ms3d_mdl.scene.ms3d.export import scene_to_ms3d


def test_ms3d_to_ms3d_is_the_export_of_its_scene(tmp_path, capsys):
    source = sample_path("ms3d", "akadjoker__H3DView/media/dwarf.ms3d")
    out = tmp_path / "dwarf.ms3d"
    assert main(["convert", str(source), "-o", str(out)]) == 0
    assert "saved" in capsys.readouterr().out
    written = read_ms3d(out)
    expected = scene_to_ms3d(load_ms3d(str(source)))
    assert len(written.vertices) == len(expected.vertices) == 1249
    assert [j.name for j in written.joints] == [j.name for j in read_ms3d(source).joints]
    assert written.model_comment == read_ms3d(source).model_comment  # the clip list, kept as written


def test_an_existing_output_is_kept_without_overwrite(tmp_path, capsys):
    source = sample_path("ms3d", "nemox-tut10/rock.ms3d")
    out = tmp_path / "rock.ms3d"
    out.write_bytes(b"mine")
    assert main(["convert", str(source), "-o", str(out)]) == 1
    assert out.read_bytes() == b"mine"
    assert "output exists" in capsys.readouterr().err
    assert main(["convert", str(source), "-o", str(out), "--overwrite"]) == 0
    assert read_ms3d(out).triangles.size == 120


def test_source_model_to_ms3d_is_read_by_assimp_with_our_counts(tmp_path):
    assimp = pytest.importorskip("assimp_py")
    source = sample_path("source", "Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl")
    out = tmp_path / "civilian.ms3d"
    assert main(["convert", str(source), "-o", str(out), "--animations", "none"]) == 0
    model = read_ms3d(out)
    scene = assimp.import_file(str(out), 0)

    def count(node) -> int:
        return 1 + sum(count(c) for c in node.children)

    joints = sum(count(c) - 1 for c in scene.root_node.children if c.name == "<MS3DJointRoot>")
    assert sum(m.num_faces for m in scene.meshes) == len(model.triangles) > 0
    assert scene.num_meshes == len(model.groups)
    assert joints == len(model.joints) > 0
    assert all(len(g.name.encode()) <= 32 for g in model.groups)


def test_two_inputs_for_one_ms3d_is_refused(tmp_path, capsys):
    a = sample_path("ms3d", "nemox-tut10/rock.ms3d")
    assert main(["convert", str(a), str(a), "-o", str(tmp_path / "x.ms3d")]) == 2
    assert "exactly one model" in capsys.readouterr().err


CONVERT_WITHOUT_BPY = without_bpy("""
sys.path.insert(0, sys.argv[1])
from io_ms3d_mdl.cli import main
raise SystemExit(main(['convert', sys.argv[2], '-o', sys.argv[3]]))
""")


def test_the_ms3d_route_needs_no_blender(tmp_path):
    import subprocess
    import sys

    from conftest import ROOT

    source = sample_path("ms3d", "akadjoker__H3DView/media/bones2.ms3d")
    out = tmp_path / "b.ms3d"
    done = subprocess.run(
        [sys.executable, "-c", CONVERT_WITHOUT_BPY, str(ROOT), str(source), str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert len(read_ms3d(out).joints) == 4


VTMB = "miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/"
# One model of every family the importers read that the tests above do not convert, by the kind sample_path takes.
EVERY_FAMILY = [
    ("goldsrc", "Pi0h1__halflife/models/hgrunt.mdl"),  # GoldSrc (v10): meshes, skeleton, sequences
    ("source", "bobthecorn2000__Half-Life-2-Brennan/models/humans/male_postures.mdl"),  # animation-only
    ("source", "Syampuuh__Titanfall2/models/props/generator_coop/generator_coop_blackbox.mdl"),  # Titanfall 2 (53)
    ("source", "r1delta__CORE/models/rocks/single_rock_01.mdl"),  # Titanfall (52)
    ("vtmb", VTMB + "character/npc/common/citizen/female3/female_citizen_3.mdl"),  # Bloodlines (2531) character
    ("vtmb", VTMB + "items/diary/ground/diari.mdl"),  # Bloodlines quantised prop
    ("vtmb", VTMB + "character/npc/common/doppleganger/doppleganger_female.mdl"),  # Bloodlines without .vtx
]


@pytest.mark.parametrize(("kind", "relative"), EVERY_FAMILY, ids=lambda x: x.rsplit("/", 1)[-1].removesuffix(".mdl"))
def test_every_importable_family_converts_to_ms3d_with_the_imports_counts(tmp_path, capsys, kind, relative):
    source = sample_path(kind, relative)
    out = tmp_path / "out.ms3d"
    assert main(["convert", str(source), "-o", str(out)]) == 0
    printed = capsys.readouterr()
    assert f"saved {out}" in printed.out
    scene = load_source(str(source))
    meshes = [o.mesh for o in scene.objects if o.mesh is not None and not o.collision]
    model = read_ms3d(out)
    assert len(model.triangles) == sum(len(m.triangles) for m in meshes)
    assert len(model.joints) == (len(scene.skeleton.bones) if scene.skeleton else 0)
    keys = sum(len(j.rotation_keys) for j in model.joints)
    assert (keys > 0) == any(len(a.channels) for a in scene.actions)
    if model.triangles.size:  # Assimp itself reads the file with our key counts per joint (it needs a mesh)
        from assimp_js import assimp_scenes, key_counts, our_key_counts

        assert key_counts(assimp_scenes([out])[str(out)]) == our_key_counts(out)
    for warning in scene.warnings:  # every warning of the import reaches the user
        assert f"warning: {warning}" in printed.err
    if "doppleganger" in relative:
        assert "the .vtx file is missing" in printed.err and len(model.joints) == 69 and not model.triangles.size
