"""Bloodlines' tables of directions (``formats.source.directions2531``): the rule that rebuilds them, held as plain
facts here; compared entry by entry with the tables the game's own ``engine.dll`` carries when the Unofficial
Patch's snapshot is fetched (found by content: the longest runs of unit vectors, 12 bytes apart for the word table,
16 for the byte table, whose fourth float is zero); and the normals they decode, on every model of the snapshot
with a quantised vertex layout, against the normals of the geometry itself."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from test_source_bloodlines import _angles_to_geometry, mirror

from io_ms3d_mdl.formats.source import structs2531 as B
from io_ms3d_mdl.formats.source.directions2531 import (
    bad_words,
    byte_table,
    direction_table,
    from_words,
    ring_sizes,
    word_table,
)
from io_ms3d_mdl.scene.load import load_source

ENGINE = "Official_Patch/Bin/engine.dll"


def test_the_ring_sizes():
    assert ring_sizes(12, 24).tolist() == [1, 8, 12, 20, 24, 24, 24, 24, 24, 20, 12, 8, 1]
    words = ring_sizes(64, 128).tolist()
    assert words[:12] == [1, 8, 16, 20, 28, 32, 40, 44, 52, 56, 60, 68]
    assert words[20:32] == [108, 112, 116, 116, 120, 124, 124, 124, 128, 128, 128, 128]
    assert words == words[::-1] and words[32] == 128 and sum(words) == 5314
    assert sum(words[:32]) == 2593  # the equator's first entry
    assert len(byte_table()) == 202 and len(word_table()) == 5314


def test_the_tables_are_unit_directions_from_minus_z_to_plus_z():
    for table in (byte_table(), word_table()):
        np.testing.assert_allclose(np.linalg.norm(table, axis=1), 1.0, atol=1e-6)
        np.testing.assert_allclose(table[0], [0, 0, -1], atol=1e-7)
        np.testing.assert_allclose(table[-1], [0, 0, 1], atol=1e-7)
        assert (np.diff(table[:, 2]) >= 0).all()
    np.testing.assert_allclose(word_table()[2593], [1, 0, 0], atol=1e-7)
    np.testing.assert_allclose(word_table()[2593 + 32], [0, 1, 0], atol=1e-7)
    np.testing.assert_allclose(
        direction_table(2, 4), [[0, 0, -1], [1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0], [0, 0, 1]], atol=1e-7
    )


def test_words_are_byte_offsets_of_entries():
    words = np.array([0, 12, 13, 12 * 5313, 12 * 5314, 65535])
    assert bad_words(words).tolist() == [False, False, True, False, True, True]
    np.testing.assert_array_equal(from_words(words[[0, 1, 3]]), word_table()[[0, 1, 5313]])


def _longest_unit_run(data: bytes, stride: int) -> np.ndarray:
    """The longest run of float32 unit vectors ``stride`` bytes apart (a fourth float, when there is room, zero)."""
    best = np.zeros((0, 3), np.float32)
    floats = stride // 4
    for start in range(stride):
        count = (len(data) - start) // stride
        rows = np.frombuffer(data, np.float32, count * floats, start).reshape(count, floats)
        with np.errstate(all="ignore"):
            unit = np.abs(np.sum(rows[:, :3].astype(np.float64) ** 2, axis=1) - 1) < 1e-5
            if floats == 4:
                unit &= rows[:, 3] == 0
        edges = np.flatnonzero(np.diff(np.r_[0, unit.astype(np.int8), 0]))
        if len(edges):
            runs = edges.reshape(-1, 2)
            k = int(np.argmax(runs[:, 1] - runs[:, 0]))
            if runs[k, 1] - runs[k, 0] > len(best):
                best = rows[runs[k, 0] : runs[k, 1], :3]
    return best


@pytest.fixture(scope="module")
def engine() -> bytes:
    repo = mirror()
    found = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{ENGINE}"], capture_output=True, check=False)
    if found.returncode or not found.stdout.startswith(b"MZ"):
        pytest.skip(f"{ENGINE} is not in the fetched snapshot")
    return found.stdout


def test_the_rule_rebuilds_the_games_tables(engine):
    """Every entry of both rebuilt tables equals the game's to within float32 rounding (its zeros are our 1e-17s
    where a cosine of 90° is not exactly zero)."""
    words = _longest_unit_run(engine, 12)
    assert len(words) == 5314
    np.testing.assert_allclose(word_table(), words, rtol=0, atol=1e-7)
    for start in range(len(engine) - 16 * 202):  # the byte table: 202 unit float4 rows from (0, 0, -1, 0)
        if engine[start : start + 16] == np.array([0, 0, -1, 0], np.float32).tobytes():
            rows = np.frombuffer(engine, np.float32, 4 * 202, start).reshape(202, 4)
            if np.allclose(rows[:, :3], byte_table(), atol=1e-7) and not rows[:, 3].any():
                break
    else:
        pytest.fail("no table of 202 float4 directions in engine.dll equals the rebuilt byte table")


def _vertex_kinds(data: bytes) -> set[int]:
    """The vertex layouts (``MODEL.vertexlisttype``) of a 2531 model's models that hold vertices."""
    kinds = set()
    parts, parts_at = (int(v) for v in np.frombuffer(data, "<i4", 2, 320))
    for b in range(parts):
        at = parts_at + 16 * b
        count, _, rel = (int(v) for v in np.frombuffer(data, "<i4", 3, at + 4))
        for m in range(count):
            record = np.frombuffer(data, B.MODEL, 1, at + rel + 224 * m)[0]
            if int(record["numvertices"]):
                kinds.add(int(record["vertexlisttype"]))
    return kinds


def test_decoded_normals_agree_with_the_geometry(tmp_path):
    """On every model of the snapshot whose vertices are all 16- or 8-bit (with its .dx80.vtx), the decoded
    normals are those of the geometry: per model, a median angle of about a degree for the 21 with 16-bit
    vertices, and within the byte table's 15° ring spacing for the 10 with 8-bit ones (measured: 0–14°)."""
    repo = mirror()
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    medians: dict[int, list[float]] = {1: [], 2: []}
    for name in names:
        if not name.lower().endswith(".mdl"):
            continue
        data = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name}"], capture_output=True).stdout
        if len(data) < 424 or data[4:8] != (2531).to_bytes(4, "little"):
            continue
        kinds = _vertex_kinds(data)
        vtx = subprocess.run(["git", "-C", str(repo), "show", f"HEAD:{name[:-4]}.dx80.vtx"], capture_output=True)
        if kinds not in ({1}, {2}) or vtx.returncode:
            continue
        folder = tmp_path / str(len(medians[1]) + len(medians[2]))  # one each: folder listings are cached
        folder.mkdir()
        stem = folder / Path(name).stem
        stem.with_suffix(".mdl").write_bytes(data)
        Path(f"{stem}.dx80.vtx").write_bytes(vtx.stdout)
        scene = load_source(str(stem.with_suffix(".mdl")))
        for obj in scene.objects:
            mesh = obj.mesh
            if not obj.collision and mesh is not None and mesh.vertex_normals is not None and len(mesh.triangles):
                medians[kinds.pop()].append(float(np.median(_angles_to_geometry(mesh))))
                break
    assert len(medians[1]) >= 10 and len(medians[2]) >= 5, {k: len(v) for k, v in medians.items()}
    assert np.median(medians[1]) < 2, medians  # the word table's rings are 2.8° apart
    assert np.median(medians[2]) < 15, medians  # the byte table's 15°
