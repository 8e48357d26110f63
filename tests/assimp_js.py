"""Assimp's own reading of MilkShape files through assimpjs (``scripts/oracle_assimpjs.py`` puts it in the per-user
cache; Node runs ``assimp_scene.js``): meshes and, what assimp_py does not expose, each animation channel's key
counts. Skips with the way to set it up when Node or assimpjs is missing (``IO_MS3D_MDL_REQUIRE_ASSIMPJS=1`` makes
that a failure, for CI)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import script_module


def _setup_script():
    return script_module("oracle_assimpjs")


def _require() -> tuple[str, Path]:
    setup = _setup_script()
    node, folder = shutil.which("node"), setup.target()
    if node is None or not setup.installed(folder):
        reason = (
            f"Assimp (assimpjs) not found at {folder}: run `python scripts/oracle_assimpjs.py` (Node.js and npm, "
            "network)" + ("" if node else "; node is not on PATH")
        )
        if os.environ.get("IO_MS3D_MDL_REQUIRE_ASSIMPJS"):
            pytest.fail(reason)
        pytest.skip(reason)
    return node, folder


def assimp_scenes(paths: list[Path]) -> dict[str, dict]:
    """Per file (by its path as given): ``meshes`` [(vertices, faces, bones)], ``animations`` [{name, channels:
    [(node name, position keys, rotation keys)]}], or ``error``. One Node process for all of them."""
    node, folder = _require()
    env = {**os.environ, "NODE_PATH": str(folder / "node_modules")}
    done = subprocess.run(
        [node, str(Path(__file__).with_name("assimp_scene.js")), *map(str, paths)],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=True,
    )
    scenes = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {scene.pop("file"): scene for scene in scenes}


def key_counts(scene: dict) -> dict[str, tuple[int, int]]:
    """Assimp's channels of its one MilkShape animation: {joint name: (position keys, rotation keys)}."""
    animations = scene.get("animations", [])
    assert len(animations) <= 1, [a["name"] for a in animations]  # MilkShape files hold one timeline
    return {name: (positions, rotations) for a in animations for name, positions, rotations in a["channels"]}


def our_key_counts(path: Path) -> dict[str, tuple[int, int]]:
    """The same from our reader: {joint name: (position keys, rotation keys)} of each joint that has keys (Assimp
    makes no channel for the others)."""
    from io_ms3d_mdl.formats.ms3d.reader import read_ms3d

    counts = {j.name: (len(j.position_keys), len(j.rotation_keys)) for j in read_ms3d(path).joints}
    return {name: keys for name, keys in counts.items() if keys != (0, 0)}
