"""The bundled example is exactly what the project's writer generates, and the headless import script works."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import EXAMPLE, ROOT, bpy, samples_dir, script_module


def load_make_example():
    return script_module("make_example")


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
    lines = run.stdout.splitlines()
    assert lines[1].split() == [
        "file",
        "status",
        "objects",
        "vertices",
        "triangles",
        "materials",
        "bones",
        "actions",
        "warnings",
        "seconds",
    ]
    assert lines[2].split()[:-1] == ["house.ms3d", "ok", "5", "40", "18", "4", "2", "1", "0"]
    assert "1 of 1 files converted" in run.stdout and out.stat().st_size > 0
    assert run.stdout.count(str(out)) == 1 and "Saved" not in run.stdout  # said once, by us, not also by Blender


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
    assert "1 of 2 files imported\n  bad.ms3d: not a MilkShape 3D file" in run.stdout


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


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_headless_import_script_table_agrees_with_the_import(tmp_path):
    """The table's counts are the import's own: a character's 22 materials and 130 animations (with its included
    model's), not what happens to be assigned or playing; and import options pass through."""
    civilian = samples_dir() / "source/Lambdagon__lambdas-weapon-pack/models/player/civilian.mdl"
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_models.py"), str(civilian), "--no-attachments"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    header, row = (line.split() for line in run.stdout.splitlines()[1:3])
    counts = dict(zip(header, row, strict=True))
    assert (counts["materials"], counts["actions"], counts["bones"]) == ("22", "130", "59")
    assert counts["objects"] == str(5 + 17)  # the armature and meshes, 17 collision solids; no attachments


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_stdout_carries_only_the_table_when_blender_logs_at_start_up(tmp_path):
    """From 5.1 on, Blender logs ``color_management | Using OCIO=…`` to stdout at ``import bpy`` when ``OCIO`` is
    set (every process a bpy process starts inherits it): the log goes to stderr, our table stays parseable."""
    config = bpy.utils.system_resource("DATAFILES", path="colormanagement/config.ocio")
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_models.py"), "-o", str(tmp_path / "house.blend")],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, OCIO=config),
    )
    assert run.returncode == 0, run.stdout + run.stderr
    assert "color_management" not in run.stdout and run.stdout.splitlines()[1].split()[:2] == ["file", "status"]
