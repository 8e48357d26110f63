"""The Blender-free ``info`` command."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import EXAMPLE, ROOT, samples_dir


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "io_ms3d_mdl", *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_info_text_and_json(tmp_path):
    text = run("info", str(EXAMPLE))
    assert text.returncode == 0, text.stderr
    assert "house.ms3d: MilkShape 3D version 4" in text.stdout and "clips: 2" in text.stdout
    mdl = samples_dir() / "source/Fennecai__Aperture-Continued/models/aperture/monster_cube.mdl"
    data = json.loads(run("info", "--json", str(EXAMPLE), str(mdl)).stdout)
    house, cube = data[str(EXAMPLE)], data[str(mdl)]
    assert (house["triangles"], house["joints"], len(house["groups"])) == (18, 2, 4)
    assert cube["version"] == 48 and [bp["base"] for bp in cube["body_parts"]] == [1, 1, 2, 4, 8]
    assert cube["body_parts"][1]["options"][0]["vertices"] == 0 and len(cube["animations"]) == 11
    assert cube["companions"]["vtx"] == "monster_cube.dx90.vtx"


def test_info_reports_bad_files_and_fails(tmp_path):
    bad = tmp_path / "bad.mdl"
    bad.write_bytes(b"IDST" + (10).to_bytes(4, "little") + bytes(400))
    result = run("info", str(bad), str(EXAMPLE))
    assert result.returncode == 1
    assert "bad.mdl: this is a GoldSrc" in result.stdout and "house.ms3d: MilkShape 3D" in result.stdout
