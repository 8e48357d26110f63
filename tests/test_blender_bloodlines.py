"""Bloodlines (MDL 2531) in real Blender: the operator builds the shared samples with the skinned mesh bound at
rest, the armature's rest pose where the vertices were skinned, actions on request; batch and convert read 2531."""

from __future__ import annotations

import json

import numpy as np
import pytest
from batch_run import run_batch
from bloodlines_writer import character_spec2531, write_bloodlines
from conftest import assert_skinned_at_rest, mirror_tree, samples_dir
from test_blender_game_browser import preference_classes, prefs  # noqa: F401 - fixtures

pytestmark = pytest.mark.blender

BASE = "vtmb/miracleflame__VTMB-Unofficial-Patch-by-Wesp/Basic_Patch/models/"
SAMPLES = {  # (meshes, vertices, bones) of the model itself, collision apart
    "character/npc/common/citizen/female3/female_citizen_3.mdl": (1, 4459, 77),
    "character/npc/common/swat/swat3.mdl": (1, 4301, 63),
    "items/garys_film/ground/garys_film.mdl": (1, 178, 0),
    "items/diary/ground/diari.mdl": (1, 114, 0),
    "character/npc/common/doppleganger/doppleganger_female.mdl": (0, 0, 69),
}


@pytest.mark.parametrize("relative", sorted(SAMPLES))
def test_shared_bloodlines_models_import(blender, relative):
    bpy = blender
    path = samples_dir() / BASE / relative
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), import_animations=False) == {"FINISHED"}
    objects = list(bpy.data.collections[path.stem].all_objects)
    meshes = [o for o in objects if o.type == "MESH" and "source_phy_solid" not in o]
    bones = sum(len(o.data.bones) for o in objects if o.type == "ARMATURE")
    assert (len(meshes), sum(len(o.data.vertices) for o in meshes), bones) == SAMPLES[relative]
    for obj in meshes:
        if obj.modifiers:  # skinned
            assert_skinned_at_rest(obj)
    assert bpy.data.collections[path.stem]["source_version"] == 2531


def test_rest_pose_is_the_inverse_of_pose_to_bone(blender):
    bpy = blender
    from io_ms3d_mdl.formats.source import read_mdl

    path = samples_dir() / BASE / "character/npc/common/doppleganger/doppleganger_female.mdl"
    bpy.ops.import_scene.source_mdl(filepath=str(path), units="SOURCE", bone_orientation="SOURCE")
    mdl = read_mdl(path)
    arm = next(o for o in bpy.data.collections[path.stem].all_objects if o.type == "ARMATURE")
    for i, name in enumerate(mdl.bone_names):
        expected = np.eye(4)
        expected[:3] = mdl.bones["posetobone"][i]
        np.testing.assert_allclose(np.array(arm.data.bones[name].matrix_local), np.linalg.inv(expected), atol=2e-3)


def test_animations_become_actions(blender):
    bpy = blender
    path = samples_dir() / BASE / "character/npc/common/swat/swat3.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    names = {a.name for a in bpy.data.actions}
    assert {"@ragdoll", "@repel_into", "@repel_loop", "@repel_outof"} <= {n.split(".")[0] for n in names}


def test_events_become_pose_markers(blender, tmp_path):
    """A character of the snapshot (skipped, saying so, without it): each sequence's events on its first action."""
    from test_bloodlines_events import BASE, EVENTS, REPO

    relative = "character/npc/common/cop_variant/rookied_cop/rookied_cop.mdl"
    path = mirror_tree(REPO, [BASE + relative], tmp_path) / BASE / relative
    bpy = blender
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), animations="ALL") == {"FINISHED"}
    markers = {
        a["source_animation"]: [(m.frame, m.name) for m in a.pose_markers] for a in bpy.data.actions if a.pose_markers
    }
    assert markers == {f"@{name}": [(f, o) for f, _, o in events] for name, events in EVENTS[relative]}


def test_batch_reads_2531(tmp_path):
    folder = tmp_path / "in" / "models"
    write_bloodlines(character_spec2531(), folder, "guy")
    out = tmp_path / "out"
    result = run_batch(tmp_path / "in", "-o", out)
    assert result.returncode == 0, result.stdout + result.stderr
    (entry,) = json.loads((out / "report.json").read_text())["files"]
    assert entry["status"] == "ok" and entry["bones"] == 3


def test_game_browser_lists_and_imports_a_loose_bloodlines_folder(blender, tmp_path, request):
    """Bloodlines keeps loose files in ``Vampire/`` (no gameinfo.txt): added as a game folder, its models list and
    import through the browser (its own ``pack###.vpk`` archives are Troika's format, not Valve's: not read)."""
    pytest.importorskip("vpk")
    request.getfixturevalue("prefs")
    from test_blender_game_browser import catalog

    game = tmp_path / "Vampire"
    write_bloodlines(character_spec2531(), game / "models" / "character", "ghoul")
    assert bpy_ops(blender).add_game(filepath="", directory=str(game)) == {"FINISHED"}
    assert bpy_ops(blender).refresh_game_models() == {"FINISHED"}
    (row,) = [m for m in catalog().models if m.name == "ghoul.mdl"]
    assert bpy_ops(blender).import_game_models(path=row.path) == {"FINISHED"}
    assert blender.data.collections["ghoul"]["source_version"] == 2531


def bpy_ops(bpy):
    return bpy.ops.io_ms3d_mdl


def test_convert_and_info_read_2531(tmp_path):
    from test_cli import run

    model = write_bloodlines(character_spec2531(), tmp_path / "in" / "models", "guy")
    info = run("info", model, "--json", cwd=tmp_path, block_bpy=True)
    assert info.returncode == 0, info.stdout + info.stderr
    assert '"version": 2531' in info.stdout
    out = run("convert", model, "-o", tmp_path / "guy.glb", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert (tmp_path / "guy.glb").read_bytes()[:4] == b"glTF"


def test_a_flexed_character_gets_its_face_and_eyeballs(blender):
    """Bloodlines flexes become shape keys driven by the face's controllers, as for later Source: the jaw_drop
    controller opens the mouth (the chin goes down); its two eyeballs become sphere empties on the head."""
    bpy = blender
    path = samples_dir() / BASE / "character/npc/common/citizen/female3/female_citizen_3.mdl"
    assert bpy.ops.import_scene.source_mdl(filepath=str(path), import_animations=False) == {"FINISHED"}
    objects = list(bpy.data.collections[path.stem].all_objects)
    (face,) = [o for o in objects if o.type == "MESH" and o.data.shape_keys is not None]
    keys = face.data.shape_keys
    assert len(keys.key_blocks) == 46 and {"AU27Z", "AU12R", "upper_right"} <= set(keys.key_blocks.keys())
    assert len(keys.animation_data.drivers) >= 40
    rest = np.array([v.co[:] for v in face.evaluated_get(bpy.context.evaluated_depsgraph_get()).data.vertices])
    face["flex:jaw_drop"] = 1.0
    face.update_tag()
    bpy.context.view_layer.update()
    evaluated = face.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh()
    moved = np.array([v.co[:] for v in evaluated.vertices]) - rest
    face.evaluated_get(bpy.context.evaluated_depsgraph_get()).to_mesh_clear()
    deepest = int(np.argmax(np.linalg.norm(moved, axis=1)))
    assert np.linalg.norm(moved[deepest]) > 0 and moved[deepest, 2] < -0.5 * np.linalg.norm(moved[deepest])
    eyes = [o for o in objects if o.type == "EMPTY" and o.empty_display_type == "SPHERE" and "eyeball" in o.name]
    assert len(eyes) == 2
    assert {o.parent_bone for o in eyes} == {"Bip01 Head"}
    assert {round(o["source_eyeball_radius"], 3) for o in eyes} == {0.5}
    # mirrored across the face: the same height, opposite sides
    left, right = sorted((o.matrix_world.translation for o in eyes), key=lambda v: v.x)
    assert abs(left.z - right.z) < 1e-3 and left.x < 0 < right.x


def test_a_drop_on_the_viewport_imports_2531(blender):
    """Dropping a ``.mdl`` on the 3D Viewport runs the Source import with the file's folder and name (what Blender's
    file handler passes): a Bloodlines character, and the model without ``.vtx`` as its skeleton alone."""
    bpy = blender
    handler = bpy.types.FileHandler.bl_rna_get_subclass_py("IO_FH_source_mdl")
    assert handler.bl_import_operator == "import_scene.source_mdl" and handler.bl_file_extensions == ".mdl"
    for relative in ("citizen/female3/female_citizen_3.mdl", "doppleganger/doppleganger_female.mdl"):
        path = samples_dir() / BASE / "character/npc/common" / relative
        result = bpy.ops.import_scene.source_mdl(directory=str(path.parent), files=[{"name": path.name}])
        assert result == {"FINISHED"} and bpy.data.collections[path.stem]["source_version"] == 2531
    kinds = {o.type for o in bpy.data.collections["doppleganger_female"].all_objects}
    assert "ARMATURE" in kinds and "MESH" not in kinds
    assert any(o.type == "MESH" for o in bpy.data.collections["female_citizen_3"].all_objects)
