"""GoldSrc files from strangers: each hostile class of ``tests/hostile.py`` ends in one clear FormatError (or a
warning, where the model can still be shown), within its budget, and never opens a file outside the roots."""

from __future__ import annotations

import os
import time

import hostile
import numpy as np
import pytest
from goldsrc_writer import GBone, character_spec, write_model_files
from test_hostile import watch  # noqa: F401 - the fixture

from io_ms3d_mdl.errors import BudgetExceeded, FormatError
from io_ms3d_mdl.formats.goldsrc import read_goldsrc
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions


def test_the_synthetic_character_reads_every_corner(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy")
    scene = load_source(str(path), SourceOptions(scale=1.0, animations="ALL"))
    assert not scene.warnings
    assert [o.name for o in scene.objects] == ["body", "hat"] and scene.triangle_count == 6
    assert [a.name for a in scene.actions] == ["walk", "aim", "aim_blend1"]
    walk = scene.actions[0]
    assert walk.markers == [("1004 step", 3.0)] and walk.props["source_looping"]
    # strips and fans alike: each quad of the body mesh is two triangles over its four vertices
    body = scene.objects[0].mesh
    assert sorted(map(tuple, np.sort(body.triangles, axis=1))) == [(0, 1, 2), (1, 2, 3), (4, 5, 7), (4, 6, 7)]
    # vertices are placed by their bone's rest pose: the arm is 10 up and turned 90° about Z
    np.testing.assert_allclose(body.positions[5], (0.0, 1.0, 10.0), atol=1e-6)
    np.testing.assert_allclose(scene.objects[0].mesh.uvs[:3], [[0, 1], [15 / 16, 1], [0, 1 - 15 / 16]][::-1], atol=0)
    assert [c.name for c in scene.collections] == ["body", "hats"]
    assert [c.hidden for c in scene.collections[1].children] == [False, True]
    assert scene.skin_families == [[0, 1, 2], [2, 1, 0]]
    assert scene.materials[1].alpha_clip == 0.5 and scene.materials[2].reflection_mapped
    assert [e.name for e in scene.empties] == ["muzzle"]


def test_textures_in_a_t_file(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    gs = read_goldsrc(path)
    assert gs.texture_file.endswith("guyT.mdl") and len(gs.textures) == 3 and gs.skins.shape == (2, 3)
    with pytest.raises(FormatError, match=r"open 'guy\.mdl'"):
        load_source(str(tmp_path / "models" / "guyT.mdl"))


def test_a_broken_texture_file_costs_the_textures_only(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    texture_file = tmp_path / "models" / "guyT.mdl"
    texture_file.write_bytes(texture_file.read_bytes()[:300])
    scene = load_source(str(path))
    assert any("textures were not imported: guyT.mdl" in w for w in scene.warnings)
    assert scene.triangle_count == 6 and not scene.materials


def test_missing_companions_cost_warnings(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy", textures_apart=True)
    (tmp_path / "models" / "guyT.mdl").unlink()
    (tmp_path / "models" / "guy01.mdl").unlink()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert any("guyT.mdl" in w for w in scene.warnings) and any("group 1" in w for w in scene.warnings)
    assert [a.name for a in scene.actions] == ["walk"] and scene.triangle_count == 6


@pytest.mark.parametrize(
    ("build", "says"),
    [
        (hostile.goldsrc_commands_overrun, "past the end of the file"),
        (hostile.goldsrc_missing_vertices, "uses vertex 999"),
        (hostile.goldsrc_texture_beyond_data, "work budget|run past the end"),
        (hostile.goldsrc_cyclic_parents, "parents must come before"),
    ],
)
def test_hostile_models_are_refused_with_one_message(tmp_path, watch, build, says):  # noqa: F811
    path = build(tmp_path)
    with pytest.raises(FormatError, match=says) as info:
        load_source(str(path))
    assert info.value.message.startswith(path.name)


def test_a_group_outside_the_folder_is_refused(tmp_path, watch):  # noqa: F811
    scene = load_source(str(hostile.goldsrc_group_traversal(tmp_path)), SourceOptions(animations="ALL"))
    assert any("outside the model's folder; refused" in w for w in scene.warnings)
    assert [a.name for a in scene.actions] == ["walk"]  # the other group's sequences are not imported


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_group_file_that_is_a_fifo_costs_its_sequences(tmp_path):
    path = write_model_files(character_spec(), tmp_path / "models", "guy")
    group = tmp_path / "models" / "guy01.mdl"
    group.unlink()
    os.mkfifo(group)
    start = time.perf_counter()
    scene = load_source(str(path), SourceOptions(animations="ALL"))
    assert [a.name for a in scene.actions] == ["walk"] and any("group 1" in w for w in scene.warnings)
    assert time.perf_counter() - start < 2.0


def test_frame_bomb_stops_at_the_budget(tmp_path):
    path = hostile.goldsrc_frame_bomb(tmp_path)
    start = time.perf_counter()
    with pytest.raises(BudgetExceeded, match="frames"):
        load_source(str(path))
    assert time.perf_counter() - start < 2.0


def test_empty_spans_are_bounded(tmp_path):
    path = hostile.goldsrc_empty_spans(tmp_path)
    start = time.perf_counter()
    scene = load_source(str(path))
    assert any("more spans than" in w or "past the end" in w for w in scene.warnings)
    assert time.perf_counter() - start < 2.0


def test_non_finite_values_are_replaced(tmp_path):
    spec = character_spec()
    spec.bones[1] = GBone("arm", 0, (0, 0, float("nan"), 0, 0, float("inf")), (float("nan"),) * 6)
    scene = load_source(str(write_model_files(spec, tmp_path / "models", "guy")), SourceOptions(animations="ALL"))
    for obj in scene.objects:
        assert np.isfinite(obj.mesh.positions).all() and np.isfinite(obj.mesh.normals).all()
    for action in scene.actions:
        for channel in action.channels:
            assert np.isfinite(channel.rotations).all() and np.isfinite(channel.locations).all()
    assert scene.warnings
