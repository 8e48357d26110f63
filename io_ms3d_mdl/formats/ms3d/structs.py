"""Packed little-endian record layouts of the MS3D format (see the format notes, §1).

Sizes are asserted at import: a wrong layout must fail loudly, not misread every file.
"""

from __future__ import annotations

import numpy as np

MAGIC = b"MS3D000000"
SUPPORTED_VERSIONS = (3, 4)
NAME_SIZE = 32
PATH_SIZE = 128

VERTEX = np.dtype(
    [("flags", "u1"), ("position", "<f4", 3), ("bone_id", "u1"), ("ref_count", "u1")],
)
TRIANGLE = np.dtype(
    [
        ("flags", "<u2"),
        ("indices", "<u2", 3),
        ("normals", "<f4", (3, 3)),
        ("s", "<f4", 3),
        ("t", "<f4", 3),
        ("smoothing_group", "u1"),
        ("group_index", "u1"),
    ],
)
MATERIAL = np.dtype(
    [
        ("name", f"V{NAME_SIZE}"),
        ("ambient", "<f4", 4),
        ("diffuse", "<f4", 4),
        ("specular", "<f4", 4),
        ("emissive", "<f4", 4),
        ("shininess", "<f4"),
        ("transparency", "<f4"),
        ("mode", "u1"),
        ("texture", f"V{PATH_SIZE}"),
        ("alphamap", f"V{PATH_SIZE}"),
    ],
)
JOINT_HEADER = np.dtype(
    [
        ("flags", "u1"),
        ("name", f"V{NAME_SIZE}"),
        ("parent", f"V{NAME_SIZE}"),
        ("rotation", "<f4", 3),
        ("position", "<f4", 3),
        ("num_rot", "<u2"),
        ("num_pos", "<u2"),
    ],
)
KEY = np.dtype([("time", "<f4"), ("value", "<f4", 3)])

# Vertex extra records per subVersion: 6 / 10 / 14 bytes (sv3 adds a second, undocumented uint; notes §1.2).
VERTEX_EXTRA = {
    1: np.dtype([("bone_ids", "u1", 3), ("weights", "u1", 3)]),
    2: np.dtype([("bone_ids", "u1", 3), ("weights", "u1", 3), ("extra", "<u4")]),
    3: np.dtype([("bone_ids", "u1", 3), ("weights", "u1", 3), ("extra", "<u4"), ("extra2", "<u4")]),
}
JOINT_COLOR = np.dtype([("color", "<f4", 3)])

for _dtype, _size in ((VERTEX, 15), (TRIANGLE, 70), (MATERIAL, 361), (JOINT_HEADER, 93), (KEY, 16)):
    assert _dtype.itemsize == _size, (_dtype, _size)
assert [VERTEX_EXTRA[v].itemsize for v in (1, 2, 3)] == [6, 10, 14]
