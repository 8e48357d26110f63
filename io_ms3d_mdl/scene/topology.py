"""Triangle-soup clean-up shared by the format converters, all vectorised: degenerate and duplicate faces,
vertex compaction, and sharp edges from smoothing groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..formats.binary import renumbered


def _row_keys(rows: np.ndarray) -> np.ndarray:
    """One int64 per row of small non-negative ints, so rows can be compared with 1-D ``np.unique``."""
    rows = np.asarray(rows, dtype=np.int64)
    span = int(rows.max()) + 1 if rows.size else 1
    keys = np.zeros(len(rows), dtype=np.int64)
    for column in rows.T:
        keys = keys * span + column
    return keys


@dataclass
class FaceCleanup:
    keep: np.ndarray  # (T,) bool: faces to build
    degenerate: int  # faces dropped for repeating a vertex
    duplicates: int  # faces dropped for repeating another face with the same winding
    back_faces: np.ndarray  # (T,) bool among kept: reversed copies of an earlier face (need their own vertices)


def classify_faces(tris: np.ndarray) -> FaceCleanup:
    """Find faces Blender's ``Mesh.validate()`` would delete, so we decide what happens to them instead.

    Degenerate faces and same-winding duplicates carry nothing and are dropped. A reversed duplicate is a
    back face of double-sided geometry: it is kept and flagged, so the caller gives it its own vertices.
    """
    n = len(tris)
    tris = np.asarray(tris, dtype=np.int64).reshape(n, 3)
    a, b, c = tris.T
    degenerate = (a == b) | (b == c) | (a == c)
    keep = ~degenerate
    back = np.zeros(n, dtype=bool)
    dup_count = 0
    rows = np.nonzero(keep)[0]
    if len(rows) > 1:
        t = tris[rows]
        set_keys = _row_keys(np.sort(t, axis=1))
        order = np.argsort(set_keys, kind="stable")
        repeats = set_keys[order][1:] == set_keys[order][:-1]
        if repeats.any():  # rare: only then tell same-winding repeats from reversed ones
            first = np.argmin(t, axis=1)
            rolled = np.take_along_axis(t, (first[:, None] + np.arange(3)) % 3, axis=1)  # same winding -> same row
            _, first_of_rolled = np.unique(_row_keys(rolled), return_index=True)
            is_first = np.zeros(len(rows), dtype=bool)
            is_first[first_of_rolled] = True
            dup_count = int((~is_first).sum())
            keep[rows[~is_first]] = False
            rows2 = rows[is_first]
            _, first_of_set = np.unique(set_keys[is_first], return_index=True)
            reversed_copy = np.ones(len(rows2), dtype=bool)
            reversed_copy[first_of_set] = False
            back[rows2[reversed_copy]] = True
    return FaceCleanup(keep=keep, degenerate=int(degenerate.sum()), duplicates=dup_count, back_faces=back)


def compact(tris: np.ndarray, vertex_count: int, back_faces: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Renumber the vertices ``tris`` uses (all below ``vertex_count``, checked by the reader) to 0..k-1 in
    ascending original order.

    Returns ``(new_tris, source)`` where ``source[i]`` is the original index of new vertex ``i``. Corners of
    ``back_faces`` get fresh copies of their vertices, appended after the shared ones.
    """
    used, new_tris = renumbered(np.asarray(tris, dtype=np.int64), vertex_count)
    source = used.astype(np.int32)
    if back_faces is not None and back_faces.any():
        rows = np.nonzero(back_faces)[0]
        extra = len(source) + np.arange(len(rows) * 3, dtype=np.int32).reshape(-1, 3)
        source = np.concatenate([source, source[new_tris[rows]].ravel()])
        new_tris[rows] = extra
    return new_tris, source


def sharp_edges_from_groups(tris: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Edges (vertex pairs) between faces in different non-zero smoothing groups. Group 0 means "none" and
    never makes an edge sharp on its own. Returns (E, 2) int32, each pair sorted.
    """
    tris = np.asarray(tris, dtype=np.int64)
    groups = np.asarray(groups, dtype=np.int64)
    used = groups[groups != 0]
    if len(tris) == 0 or used.size == 0 or (used == used[0]).all():
        return np.zeros((0, 2), dtype=np.int32)  # fewer than two groups: nothing can differ
    edges = np.sort(np.stack([tris, np.roll(tris, -1, axis=1)], axis=2).reshape(-1, 2), axis=1)
    face_group = np.repeat(groups, 3)
    nonzero = face_group != 0
    keys, face_group = _row_keys(edges[nonzero]), face_group[nonzero]
    order = np.lexsort((face_group, keys))  # by edge, then group: first/last of each run are min/max
    keys, face_group = keys[order], face_group[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    ends = np.r_[starts[1:], len(keys)] - 1
    differ = face_group[starts] != face_group[ends]
    span = int(tris.max()) + 1
    sharp = keys[starts[differ]]
    return np.stack([sharp // span, sharp % span], axis=1).astype(np.int32)


def clean_normals(normals: np.ndarray) -> np.ndarray | None:
    """Unit-length per-corner normals; unusable ones (zero, NaN) become zero rows, which Blender reads as "auto".
    Returns None when no normal is usable.
    """
    normals = np.asarray(normals, dtype=np.float32).reshape(-1, 3)
    with np.errstate(invalid="ignore", over="ignore"):
        length = np.sqrt(np.einsum("ij,ij->i", normals, normals))
        usable = np.isfinite(length) & (length > 1e-6)
        if not usable.any():
            return None
        out = np.where(usable[:, None], normals / np.where(usable, length, 1.0)[:, None], 0.0)
    return out.astype(np.float32)


def vertex_normals_if_consistent(tris: np.ndarray, normals: np.ndarray, num_vertices: int) -> np.ndarray | None:
    """Per-vertex normals when every corner of each vertex carries the same normal (smooth meshes), else None.

    Blender sets per-vertex custom normals several times faster than per-corner ones.
    """
    corners = np.asarray(tris, dtype=np.int64).ravel()
    out = np.zeros((num_vertices, 3), dtype=np.float32)
    out[corners] = normals  # last writer wins; the check below proves every corner agrees
    if np.abs(out[corners] - normals).max(initial=0.0) > 1e-6:
        return None
    return out
