"""The bundled example is exactly what the project's writer generates, and the headless import script works."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from conftest import EXAMPLE, ROOT, bpy


def load_make_example():
    spec = importlib.util.spec_from_file_location("make_example", ROOT / "scripts" / "make_example.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_committed_example_matches_the_generator():
    make = load_make_example()
    from ms3d_writer import write_ms3d

    assert EXAMPLE.read_bytes() == write_ms3d(make.house_spec())
    assert (ROOT / "examples" / "Textures" / "house_bricks.png").read_bytes() == make.png_bytes(make.brick_texture())


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_headless_import_script(tmp_path):
    out = tmp_path / "house.blend"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_models.py"), "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "house.ms3d  5        40        18     4          1       2      1        ok" in run.stdout
    assert "1 of 1 files imported" in run.stdout and out.stat().st_size > 0


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_headless_import_script_fails_on_bad_files(tmp_path):
    bad = tmp_path / "bad.ms3d"
    bad.write_bytes(b"not a model at all")
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_models.py"), str(bad), str(EXAMPLE)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 1
    assert "FAILED: bad.ms3d: not a MilkShape 3D file" in run.stdout
    assert "1 of 2 files imported" in run.stdout


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_headless_import_script_takes_source_models(tmp_path):
    from source_writer import character_spec, write_source

    path = write_source(character_spec(), tmp_path / "models", "guy")
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_models.py"), str(path)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "guy.mdl" in run.stdout and "1 of 1 files imported" in run.stdout
