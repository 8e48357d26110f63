"""The ``io-ms3d-mdl`` command line: ``info`` with numpy alone, from any folder; ``convert`` with Blender; a clear
error naming what to install when Blender is missing; and the package metadata pip builds the command from."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from conftest import EXAMPLE, ROOT, bpy, samples_dir
from no_bpy import without_bpy
from source_writer import SAnimation, SNode, character_spec, write_source

needs_blender = pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")

CLI_WITHOUT_BPY = without_bpy("""
import runpy
sys.argv = ['io-ms3d-mdl', *sys.argv[1:]]
runpy.run_module('io_ms3d_mdl', run_name='__main__')
""")


def run(*args: str, cwd: Path = ROOT, block_bpy: bool = False, timeout: float = 300) -> subprocess.CompletedProcess:
    """``python -m io_ms3d_mdl ARGS`` with the checkout on the path (as an installed package would be)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, "-c", CLI_WITHOUT_BPY] if block_bpy else [sys.executable, "-m", "io_ms3d_mdl"]
    return subprocess.run(
        [*command, *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )


# --- info -----------------------------------------------------------------------------------------------------


def test_info_text_is_for_people_and_json_for_programs(tmp_path):
    text = run("info", EXAMPLE)
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("house.ms3d: MilkShape 3D version 4\n")
    assert "  40 vertices, 18 triangles\n" in text.stdout and "  clips: 2\n" in text.stdout
    assert "    walls   8 triangles  material bricks" in text.stdout
    assert "    Open   frames 1–12" in text.stdout
    assert "{" not in text.stdout and "False" not in text.stdout  # no Python dicts or booleans for people
    mdl = samples_dir() / "source/Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"
    data = json.loads(run("info", "--json", EXAMPLE, mdl).stdout)
    house, cube = data[str(EXAMPLE)], data[str(mdl)]
    assert (house["triangles"], house["joints"], len(house["groups"])) == (18, 2, 4)
    assert cube["version"] == 48 and [bp["base"] for bp in cube["body_parts"]] == [1, 1, 2, 4, 8]
    assert cube["body_parts"][1]["options"][0]["vertices"] == 0 and len(cube["animations"]) == 11
    assert cube["companions"]["vtx"] == "monster_cube.dx90.vtx"


def test_info_text_marks_deltas_and_cuts_long_lists(tmp_path):
    turn = [SNode(1, ("q64", (0.7071068, 0.0, 0.0, 0.7071068)))]
    animations = [SAnimation(f"anim{i:02d}", 4, turn, delta=i == 3) for i in range(25)]
    path = write_source(character_spec(includes=[], animations=animations), tmp_path / "models", "guy")
    result = run("info", path)
    assert result.returncode == 0, result.stderr
    assert "  animations: 25 (1 delta)\n" in result.stdout
    assert "anim03  4 frames at 30 fps, delta" in result.stdout and "anim00  4 frames at 30 fps\n" in result.stdout
    assert "… and 5 more (--json lists all)" in result.stdout and "anim24" not in result.stdout
    assert "  companion files: guy.vvd, guy.dx90.vtx (no .phy, .ani)" in result.stdout
    assert "delta False" not in result.stdout and "True" not in result.stdout


def test_info_shows_frame_major_animations_collision_and_flex_rules():
    coverage = samples_dir() / "coverage/source"
    galil = coverage / "NeXiDE__Counter-Strike-Oldschool-Offensive/models/weapons/v_rif_galilar_scoped.mdl"
    cremator = coverage / "CombineFodder__hl2betaplayermodels/models/player/cremator.mdl"
    scout = samples_dir() / "source/GoodFishMan__mercenaries/models/player/scout.mdl"
    result = run("info", galil, cremator, scout)
    assert result.returncode == 0, result.stderr
    assert "  animations: 9 (9 frame-major)\n" in result.stdout
    assert "  collision: 15 solids of 15 convex pieces, 14 ragdoll joints\n" in result.stdout
    assert "  sequences: 306   flexes: 42 (42 controllers, 40 rules)\n" in result.stdout
    data = json.loads(run("info", "--json", cremator).stdout)[str(cremator)]
    assert data["physics"] == {"solids": 15, "pieces": 15, "constraints": 14, "checksum_matches": True}
    assert {a["layout"] for a in data["animations"]} == {"per-bone streams"}


def test_info_reports_bad_files_and_fails(tmp_path):
    bad = tmp_path / "bad.mdl"
    bad.write_bytes(b"IDST" + (10).to_bytes(4, "little") + bytes(100))  # a GoldSrc header cut short
    result = run("info", bad, EXAMPLE, tmp_path / "missing.ms3d")
    assert result.returncode == 1
    assert "bad.mdl: GoldSrc studiohdr_t header" in result.stdout and "house.ms3d: MilkShape 3D" in result.stdout
    assert "missing.ms3d" in result.stdout


def test_info_needs_no_blender_and_works_from_any_folder(tmp_path):
    """With bpy blocked and the current folder elsewhere, as after ``pip install`` without Blender."""
    result = run("info", EXAMPLE, cwd=tmp_path, block_bpy=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("house.ms3d: MilkShape 3D version 4")


def test_convert_and_batch_without_blender_say_what_to_install(tmp_path):
    for command in ("convert", "batch"):
        result = run(command, EXAMPLE, "-o", tmp_path / "out.blend", cwd=tmp_path, block_bpy=True)
        assert result.returncode == 2, result.stdout + result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: io-ms3d-mdl {command} needs Blender as a Python module: pip install bpy==")
    assert list(tmp_path.iterdir()) == []


def test_help_lists_every_command_and_version():
    result = run("--help")
    assert result.returncode == 0 and all(c in result.stdout for c in ("info", "convert", "batch"))
    from io_ms3d_mdl import __version__

    assert run("--version").stdout.strip() == f"io-ms3d-mdl {__version__}"


# --- the package pip builds ----------------------------------------------------------------------------------


def test_pyproject_packages_only_the_library_with_numpy_and_the_command():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dependencies"] == ["numpy"]  # bpy pins Python and Blender: never a dependency
    assert project["project"]["scripts"] == {"io-ms3d-mdl": "io_ms3d_mdl.cli:entry"}
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "io_ms3d_mdl.__version__"}
    assert project["tool"]["setuptools"]["packages"]["find"]["include"] == ["io_ms3d_mdl", "io_ms3d_mdl.*"]
    assert project["tool"]["ruff"]["line-length"] == 120
    from io_ms3d_mdl.cli import entry

    assert callable(entry)


def test_the_wheel_holds_the_package_and_the_command(tmp_path):
    """Built without the network when setuptools is recent enough here; `pip install .` is the same build."""
    setuptools = pytest.importorskip("setuptools")
    if int(setuptools.__version__.split(".")[0]) < 77:
        pytest.skip(f"setuptools {setuptools.__version__} here; the build asks for 77 or later")
    source = tmp_path / "checkout"  # setuptools writes build/ and *.egg-info beside the sources: not in ours
    shutil.copytree(ROOT / "io_ms3d_mdl", source / "io_ms3d_mdl", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (wheel,) = tmp_path.glob("io_ms3d_mdl-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "io_ms3d_mdl/cli/__init__.py" in names and "io_ms3d_mdl/formats/ms3d/reader.py" in names
    assert not [n for n in names if n.startswith(("tests/", "scripts/", "examples/", "__init__.py"))]


# --- convert, with Blender ------------------------------------------------------------------------------------


@needs_blender
def test_convert_into_one_blend_one_glb_or_one_file_each(tmp_path):
    guy = write_source(character_spec(includes=[]), tmp_path / "in" / "models", "guy")
    one = run("convert", EXAMPLE, guy, "-o", tmp_path / "all.blend", cwd=tmp_path)
    assert one.returncode == 0, one.stdout + one.stderr
    assert one.stdout.count("saved") == 1 and "Saved" not in one.stdout  # Blender's own line is not repeated
    assert "2 of 2 files converted" in one.stdout and (tmp_path / "all.blend").is_file()
    glb = run("convert", EXAMPLE, "-o", tmp_path / "house.glb", cwd=tmp_path)
    assert glb.returncode == 0, glb.stdout + glb.stderr
    assert (tmp_path / "house.glb").read_bytes()[:4] == b"glTF"
    each = run("convert", EXAMPLE, guy, "--output-dir", tmp_path / "each", "--format", "glb", cwd=tmp_path)
    assert each.returncode == 0, each.stdout + each.stderr
    assert sorted(p.name for p in (tmp_path / "each").rglob("*.glb")) == ["guy.glb", "house.glb"]
    again = run("convert", EXAMPLE, "-o", tmp_path / "all.blend", cwd=tmp_path)
    assert again.returncode == 1 and "output exists" in again.stdout and "(use --overwrite)" in again.stdout


@needs_blender
def test_convert_flags_reach_the_import(tmp_path):
    plain = run("convert", EXAMPLE)
    single = run("convert", EXAMPLE, "--objects", "single", "--animations", "none")
    assert plain.returncode == single.returncode == 0, plain.stderr + single.stderr
    row = dict(zip(plain.stdout.split("\n")[1].split(), plain.stdout.split("\n")[2].split(), strict=True))
    flat = dict(zip(single.stdout.split("\n")[1].split(), single.stdout.split("\n")[2].split(), strict=True))
    assert (row["objects"], row["actions"]) == ("5", "1")
    assert (flat["objects"], flat["actions"]) == ("2", "0")  # one mesh and the armature; no action
    bad = run("convert", EXAMPLE, "--axis-forward", "Y", "--axis-up=-Y")
    assert bad.returncode == 2 and "must be different axes" in bad.stderr


@needs_blender
def test_convert_png_textures_are_linked_beside_the_blend(tmp_path):
    folder = samples_dir() / "source/Fennecai__Aperture-Continued"
    cube = folder / "models/aperture/monster_cube.mdl"
    out = tmp_path / "out" / "cube.blend"
    result = run("convert", cube, "-o", out, "--textures", "png", "--animations", "none")
    assert result.returncode == 0, result.stdout + result.stderr
    pngs = sorted((out.parent / "textures").glob("*.png"))
    assert pngs, "no texture was written"
    probe = subprocess.run(
        [sys.executable, "-c", PRINT_IMAGE_PATHS, str(out)], capture_output=True, text=True, timeout=120
    )
    paths = [line for line in probe.stdout.splitlines() if line.startswith("//")]
    assert paths and all(p.startswith("//textures/") for p in paths), probe.stdout + probe.stderr
    assert "MISSING" not in probe.stdout


PRINT_IMAGE_PATHS = """
import os, sys, bpy
bpy.ops.wm.open_mainfile(filepath=sys.argv[1])
for image in bpy.data.images:
    if image.source == "FILE" and not image.packed_file:
        print(image.filepath)
        if not os.path.isfile(bpy.path.abspath(image.filepath)):
            print("MISSING", image.filepath)
sys.stdout.flush()
os._exit(0)
"""
