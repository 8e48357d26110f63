"""Generate the bundled example model ``examples/house.ms3d`` and its texture with the project's own MS3D writer.

The files are committed; a test regenerates them and checks they are byte-identical, so the example always
matches the writer. Run ``python scripts/make_example.py`` after changing either.
"""

from __future__ import annotations

import os
import struct
import sys
import zlib

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests"))

from ms3d_writer import Group, Joint, Material, Ms3dSpec, Triangle, Vertex, VertexExtra, write_ms3d  # noqa: E402

EXAMPLE = os.path.join(ROOT, "examples", "house.ms3d")
TEXTURE = os.path.join(ROOT, "examples", "Textures", "house_bricks.png")


def png_bytes(rgb: np.ndarray) -> bytes:
    """A minimal RGB PNG (no dependencies beyond zlib)."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].astype(np.uint8).tobytes() for y in range(h))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def brick_texture(size: int = 64) -> np.ndarray:
    y, x = np.mgrid[0:size, 0:size]
    row = y // 8
    mortar = (y % 8 == 0) | (((x + (row % 2) * 8) % 16) == 0)
    img = np.empty((size, size, 3), np.uint8)
    img[...] = (168, 74, 52)
    img[(row % 3 == 1) & ~mortar] = (150, 64, 45)
    img[mortar] = (205, 200, 190)
    return img


class _Builder:
    def __init__(self) -> None:
        self.spec = Ms3dSpec(fps=24.0, total_frames=24)
        self.group_tris: dict[str, list[int]] = {}

    def quad(
        self, group: str, corners: list[tuple[float, float, float]], uv_scale: tuple[float, float], smooth: int
    ) -> None:
        """A planar quad, corners counter-clockwise seen from its front, as two triangles with a flat normal."""
        base, n = self._corners(corners)
        su, sv = uv_scale
        # corners: bottom-left, top-left, top-right, bottom-right; MilkShape t runs downwards
        uv = [(0.0, sv), (0.0, 0.0), (su, 0.0), (su, sv)]
        for a, b, c in ((0, 1, 2), (0, 2, 3)):
            self._tri(group, (base + a, base + b, base + c), (n, n, n), (uv[a], uv[b], uv[c]), smooth)

    def triangle(self, group: str, corners: list[tuple[float, float, float]], smooth: int) -> None:
        base, n = self._corners(corners)
        self._tri(group, (base, base + 1, base + 2), (n, n, n), ((0.5, 0.0), (0.0, 1.0), (1.0, 1.0)), smooth)

    def _corners(self, corners: list[tuple[float, float, float]]) -> tuple[int, tuple[float, ...]]:
        """Add ``corners`` as vertices: the first one's index, and the unit normal of their plane (front side
        counter-clockwise)."""
        p = np.array(corners, dtype=np.float64)
        n = np.cross(p[1] - p[0], p[2] - p[0])
        base = len(self.spec.vertices)
        self.spec.vertices += [Vertex(tuple(float(c) for c in v)) for v in p]
        return base, tuple(float(c) for c in n / np.linalg.norm(n))

    def _tri(self, group: str, idx: tuple[int, int, int], normals: tuple, uv: tuple, smooth: int) -> None:
        self.group_tris.setdefault(group, []).append(len(self.spec.triangles))
        self.spec.triangles.append(
            Triangle(idx, normals=normals, s=tuple(u for u, _ in uv), t=tuple(v for _, v in uv), smoothing_group=smooth)
        )


def house_spec() -> Ms3dSpec:
    b = _Builder()
    w, h, top, over = 1.0, 1.5, 2.4, 1.2
    walls = [  # MilkShape is Y-up; the front door faces -Z
        [(-w, 0, -w), (-w, h, -w), (w, h, -w), (w, 0, -w)],
        [(w, 0, -w), (w, h, -w), (w, h, w), (w, 0, w)],
        [(w, 0, w), (w, h, w), (-w, h, w), (-w, 0, w)],
        [(-w, 0, w), (-w, h, w), (-w, h, -w), (-w, 0, -w)],
    ]
    for i, quad in enumerate(walls):
        b.quad("walls", quad, (2.0, 1.5), i + 1)
    eaves = [(-over, h, -over), (over, h, -over), (over, h, over), (-over, h, over)]
    apex = (0.0, top, 0.0)
    for i in range(4):
        b.triangle("roof", [eaves[i], apex, eaves[(i + 1) % 4]], 5 + i)
    b.quad("roof", [eaves[0], eaves[1], eaves[2], eaves[3]], (1.0, 1.0), 9)
    b.quad(
        "door", [(0.3, 0, -w - 0.01), (-0.3, 0, -w - 0.01), (-0.3, 1.0, -w - 0.01), (0.3, 1.0, -w - 0.01)], (1, 1), 10
    )
    b.quad(
        "window", [(w + 0.01, 0.6, 0.4), (w + 0.01, 0.6, -0.4), (w + 0.01, 1.2, -0.4), (w + 0.01, 1.2, 0.4)], (1, 1), 11
    )

    spec = b.spec
    spec.materials = [
        Material("bricks", diffuse=(1.0, 1.0, 1.0, 1.0), texture="Textures\\house_bricks.png"),
        Material("roof tiles", diffuse=(0.45, 0.08, 0.05, 1.0), specular=(0.6, 0.6, 0.6, 1.0), shininess=40.0),
        Material("wood", diffuse=(0.35, 0.2, 0.08, 1.0)),
        Material("glass", diffuse=(0.6, 0.8, 1.0, 0.35), specular=(1, 1, 1, 1), shininess=120.0, transparency=0.35),
    ]
    order = ["walls", "roof", "door", "window"]
    spec.groups = [Group(name, b.group_tris[name], material_index=i) for i, name in enumerate(order)]

    # A rig: the house on a root joint, the door on a hinge at its right edge that swings out and back.
    spec.joints = [
        Joint("house", position=(0.0, 0.0, 0.0)),
        Joint(
            "door hinge",
            "house",
            position=(0.3, 0.0, -w - 0.01),
            rotation_keys=[(1 / 24, (0.0, 0.0, 0.0)), (12 / 24, (0.0, -1.4, 0.0)), (24 / 24, (0.0, 0.0, 0.0))],
        ),
    ]
    door = {i for t in b.group_tris["door"] for i in spec.triangles[t].indices}
    for i, vertex in enumerate(spec.vertices):
        vertex.bone_id = 1 if i in door else 0
    spec.joint_colors = [(0.9, 0.9, 0.2), (0.2, 0.6, 1.0)]

    spec.comments = {
        "group": [(0, "Brick walls; the texture tiles twice across each wall")],
        "joint": [(1, "Turns about MilkShape's up axis (Y)")],
    }
    spec.model_comment = (
        "Example house generated by scripts/make_example.py (io_ms3d_mdl)\r\n"
        "Name=Open, Start=1, End=12, Loop=False\r\nName=Close, Start=12, End=24, Loop=False"
    )
    spec.vertex_extra = [VertexExtra() for _ in spec.vertices]
    spec.model_extra = (0.25, 0, 0.5)
    return spec


def main() -> None:
    os.makedirs(os.path.dirname(TEXTURE), exist_ok=True)
    with open(EXAMPLE, "wb") as f:
        f.write(write_ms3d(house_spec()))
    with open(TEXTURE, "wb") as f:
        f.write(png_bytes(brick_texture()))
    print(EXAMPLE)


if __name__ == "__main__":
    main()
