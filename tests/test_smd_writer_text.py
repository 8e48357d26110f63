"""The SMD/VTA writer's byte tables give exactly the lines a plain per-line ``%`` formatting of ``float_tokens``
would (the writer's text before it was vectorised): animations with held and changing channels, triangles with 0 to
4 links per corner, unused links, nan weights and non-ASCII material names, and a VTA."""

from __future__ import annotations

import io

import numpy as np
import pytest

from io_ms3d_mdl.formats.float_text import finite32, float_tokens
from io_ms3d_mdl.formats.smd import SmdSkeleton, SmdTriangles, write_smd, write_vta


def tokens(values: np.ndarray) -> list[str]:
    return float_tokens(values)[0].tolist()


def reference_skeleton(frames: np.ndarray) -> str:
    text = ["skeleton\n"]
    for f, pose in enumerate(frames):
        text.append(f"time {f}\n")
        for b, row in enumerate(pose):
            text.append(" ".join([str(b), *tokens(row)]) + "\n")
    return "".join(text) + "end\n"


def reference_triangles(tri: SmdTriangles) -> str:
    text = ["triangles\n"]
    for t in range(len(tri.material_index)):
        text.append(tri.materials[tri.material_index[t]] + "\n")
        for c in range(3):
            bones, weights = tri.bones[t, c], np.asarray(tri.weights[t, c], np.float32)
            used = [i for i in range(len(bones)) if bones[i] >= 0 and weights[i] > 0]
            parent = int(bones[used[0]]) if used else max(int(bones[0]), 0)
            numbers = np.concatenate([tri.positions[t, c], tri.normals[t, c], tri.uvs[t, c]])
            line = " ".join([str(parent), *tokens(numbers)])
            if used:
                links = [f"{int(bones[i])} {tokens(weights[i : i + 1])[0]}" for i in used]
                line += f" {len(used)} " + " ".join(links)
            text.append(line + "\n")
    return "".join(text) + "end\n"


def test_smd_text_equals_per_line_formatting():
    rng = np.random.default_rng(5)
    frames = rng.standard_normal((30, 12, 6)).astype(np.float32)
    frames[:, 3] = frames[0, 3]  # a bone holding still
    frames[10:20, :, :3] = frames[9, :, :3]  # positions holding for a while
    frames[5, 2, 4] = np.nan
    skeleton = SmdSkeleton([f"b{i}" for i in range(12)], np.arange(12) - 1)
    t = 700
    bones = rng.integers(-1, 12, (t, 3, 4))
    weights = rng.random((t, 3, 4)).astype(np.float32) * (rng.random((t, 3, 4)) > 0.3)
    weights[0, 0, 0] = np.nan
    triangles = SmdTriangles(
        ["skin", "métal"],
        rng.integers(0, 2, t),
        (rng.standard_normal((t, 3, 3)) * 40).astype(np.float32),
        rng.standard_normal((t, 3, 3)).astype(np.float32),
        rng.random((t, 3, 2)).astype(np.float32),
        bones,
        weights,
    )
    out = io.BytesIO()
    stats = write_smd(out, skeleton, frames, triangles)
    text = out.getvalue().decode("utf-8")
    body = text.split("end\n", 1)[1]
    assert body == reference_skeleton(finite32(frames)[0]) + reference_triangles(triangles)
    assert stats.rows == 30 * 12 + t * 3 and stats.non_finite == 1


def test_vta_text_equals_per_line_formatting():
    rng = np.random.default_rng(6)
    base = rng.standard_normal((50, 3)).astype(np.float32)
    normals = rng.standard_normal((50, 3)).astype(np.float32)
    moved = np.array([3, 7, 41])
    shapes = [
        ("smile", moved, base[moved] + 1, normals[moved]),
        ("none", np.zeros(0, int), np.zeros((0, 3)), np.zeros((0, 3))),
    ]
    out = io.BytesIO()
    write_vta(out, SmdSkeleton(["root"], np.array([-1])), base, normals, shapes)
    text = out.getvalue().decode().split("vertexanimation\n", 1)[1]
    expected = ["time 0\n"] + [" ".join([str(i), *tokens(np.r_[base[i], normals[i]])]) + "\n" for i in range(50)]
    expected += ["time 1\n"] + [
        " ".join([str(i), *tokens(np.r_[base[i] + 1, normals[i]])]) + "\n" for i in moved.tolist()
    ]
    expected += ["time 2\n", "end\n"]
    assert text == "".join(expected)


def test_corners_numbered_by_vertex_write_the_same_text():
    """``SmdTriangles.corners``: each vertex's line is formatted once and shared by its corners; the text and the
    counts (a non-finite value counted at every corner that writes it) are those of the corners written alone."""
    rng = np.random.default_rng(11)
    v, t = 300, 900
    tris = rng.integers(0, v, (t, 3))
    positions = (rng.standard_normal((v, 3)) * 40).astype(np.float32)
    positions[7] = (np.nan, 1.5, np.inf)
    normals, uvs = rng.standard_normal((v, 3)), rng.random((v, 2))
    bones = rng.integers(-1, 12, (v, 4))
    weights = rng.random((v, 4)).astype(np.float32) * (rng.random((v, 4)) > 0.3)
    fields = (positions[tris], normals[tris], uvs[tris], bones[tris], weights[tris])
    skeleton = SmdSkeleton([f"b{i}" for i in range(12)], np.arange(12) - 1)
    frame = np.zeros((1, 12, 6), np.float32)
    texts, counts = [], []
    for corners in (None, tris):
        out = io.BytesIO()
        stats = write_smd(out, skeleton, frame, SmdTriangles(["a", "b"], tris[:, 0] % 2, *fields, corners=corners))
        texts.append(out.getvalue())
        counts.append((stats.rows, stats.non_finite))
    assert texts[0] == texts[1]
    assert counts[0] == counts[1] == (12 + t * 3, 2 * int((tris == 7).sum()))


def test_shared_lines_equal_the_corners_written_alone_at_every_edge():
    """The shared lines' writer (each triangle four picks from a pool of lines: its material's, its corners') against
    the corners formatted alone: material names with NULs, quotes, line breaks, non-ASCII and surrogate-escaped
    bytes or nothing at all; no materials; indices counted from the end; one triangle and either side of a chunk;
    corner numbers with gaps; non-finite values. A material index past the end is refused by both."""
    from io_ms3d_mdl.formats.smd.writer import CHUNK, SmdStats, write_triangles

    rng = np.random.default_rng(40)
    odd = ["", "a\0b", "\0", "x\0", 'q"uote', "é日本", "bad\udcff\udc80", "line\nbreak\r", " "]
    per_chunk = CHUNK // 3
    for t, materials in [(1, odd), (1, []), (per_chunk, odd), (per_chunk + 1, odd), (per_chunk + 1, ["m"])]:
        v = min(3 * t, 4000)
        tris = rng.integers(0, v, (t, 3))
        positions = rng.standard_normal((v, 3)).astype(np.float32)
        positions[0] = (np.nan, np.inf, -np.inf)
        weights = rng.random((v, 3)).astype(np.float32) * (rng.random((v, 3)) > 0.3)
        weights[1, 0] = np.nan
        fields = (positions[tris], rng.standard_normal((v, 3))[tris], rng.random((v, 2))[tris])
        links = (rng.integers(-1, 300, (v, 3))[tris], weights[tris])
        count = max(len(materials), 1)
        index = rng.integers(-count, count, t)
        texts, stats = [], []
        for corners in (None, tris * 3 + 1):
            out, counted = io.BytesIO(), SmdStats()
            write_triangles(out, SmdTriangles(materials, index, *fields, *links, corners=corners), counted)
            texts.append(out.getvalue())
            stats.append((counted.rows, counted.non_finite))
        assert texts[0] == texts[1] and stats[0] == stats[1]
        assert texts[0].count(b"\n") == 2 + 4 * t and b"\0" not in texts[0]
        past = index.copy()
        past[-1] = count
        for corners in (None, tris):
            with pytest.raises(IndexError):
                write_triangles(
                    io.BytesIO(), SmdTriangles(materials, past, *fields, *links, corners=corners), SmdStats()
                )
