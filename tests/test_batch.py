"""scripts/batch_import.py with the bpy wheel: folders, outputs, workers, failures, the JSON report."""

from __future__ import annotations

import json
import shutil

import pytest
from batch_run import run_batch
from conftest import EXAMPLE, bpy
from source_writer import character_spec, write_source

pytestmark = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")


def models(tmp_path):
    folder = tmp_path / "in"
    (folder / "nested").mkdir(parents=True)
    shutil.copy(EXAMPLE, folder / "house.ms3d")
    write_source(character_spec(), folder / "nested" / "models", "guy")
    (folder / "broken.MS3D").write_bytes(b"MS3D000000\x04\0\0\0\xff\xff")  # truncated, and an upper-case extension
    return folder


def blends(folder, pattern="*.blend"):
    """Every output below a folder, as sorted relative paths."""
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob(pattern))


@pytest.mark.parametrize("jobs", [1, 2])
def test_folder_to_blend_files(tmp_path, jobs):
    out = tmp_path / "out"
    result = run_batch(models(tmp_path), "-o", out, "--jobs", jobs)
    assert result.returncode == 1  # one file failed
    report = json.loads((out / "report.json").read_text())
    by_name = {r["file"].rsplit("/", 1)[-1]: r for r in report["files"]}
    assert set(by_name) == {"house.ms3d", "guy.mdl", "broken.MS3D"}
    assert by_name["house.ms3d"]["status"] == "ok" and by_name["house.ms3d"]["triangles"] == 18
    assert by_name["guy.mdl"]["bones"] == 2 and by_name["guy.mdl"]["objects"] > 0
    assert by_name["broken.MS3D"]["status"] == "failed" and "file ends inside" in by_name["broken.MS3D"]["error"]
    assert blends(out) == ["house.blend", "nested/models/guy.blend"]  # the input tree, mirrored
    assert by_name["guy.mdl"]["output"] == str(out / "nested" / "models" / "guy.blend")
    assert "[3/3]" in result.stderr and "2 of 3 files converted" in result.stdout


def test_glb_and_single_blend(tmp_path):
    folder = models(tmp_path)
    (folder / "broken.MS3D").unlink()
    glb = run_batch(folder, "-o", tmp_path / "glb", "--format", "glb")
    assert glb.returncode == 0, glb.stdout + glb.stderr
    assert blends(tmp_path / "glb", "*.glb") == ["house.glb", "nested/models/guy.glb"]
    assert (tmp_path / "glb" / "house.glb").read_bytes()[:4] == b"glTF"
    single = run_batch(folder, "-o", tmp_path / "one", "--single", tmp_path / "all.blend")
    assert single.returncode == 0, single.stdout + single.stderr
    assert (tmp_path / "all.blend").stat().st_size > 0 and not blends(tmp_path / "one")
    assert (tmp_path / "one" / "report.json").is_file()  # -o given: the report still goes there


def test_nothing_to_do(tmp_path):
    assert run_batch(tmp_path, "-o", tmp_path / "out").returncode == 1


def test_arguments_after_a_double_dash_as_blender_passes_them(tmp_path):
    """``blender --background --python batch_import.py -- ARGS``: only what follows ``--`` is ours."""
    folder = models(tmp_path)
    (folder / "broken.MS3D").unlink()
    result = run_batch("--", folder / "house.ms3d", "-o", tmp_path / "out")
    assert result.returncode == 0, result.stdout + result.stderr
    assert blends(tmp_path / "out") == ["house.blend"]
