"""An independent reading of Bloodlines models (MDL 2531 + VTX 107) for the tests, written from the public layout
facts with ``struct`` (no code of the importer): what the triangles, vertex positions, weights and rest pose of a
file are, to check the importer against.

Facts used: header counts/offsets at 240 (bones) and 320 (body parts); bones of 160 bytes with parent at 4 and a
3x4 poseToBone at 88 (its inverse is the bind pose); body parts of 16 bytes; models of 224 bytes (vertex count 144,
vertex offset 148, list type 156, position offset 160 and scale 172); meshes of 60 bytes (vertex count 8, first
vertex 12); vertex layouts: 44-byte skinned (weights u8[3] in 255ths, bones i16[3] at 4, position float[3] at 12),
12-byte (u16 position: offset + scale·q), 8-byte (u8 position: offset + scale·q/255); VTX 107: header 36 bytes
(body parts at 28), 8-byte body parts/models, 12-byte LODs, 8-byte meshes (u16 strip-group count, offset at 4),
20-byte strip groups (u16 vertex/index/strip counts, flags at 6, offsets at 8/12/16; flag 0x10: 2-byte vertices
holding the mesh vertex id, else 12-byte vertices with it at 10), 16-byte strips (u16 index count/first at 0/2,
flags at 9: 1 = triangle list). Triangles are clockwise in the file.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np


@dataclass
class RefModel:
    positions: np.ndarray  # (V, 3) float64, the model's own vertices
    triangles: np.ndarray  # (T, 3) model vertex indices, counter-clockwise (reversed from the file)
    bones: np.ndarray | None  # (V, 3) bone per slot (skinned only)
    weights: np.ndarray | None  # (V, 3) 0..1
    part: int
    option: int


def _i(data: bytes, at: int, n: int = 1):
    values = struct.unpack_from(f"<{n}i", data, at)
    return values if n > 1 else values[0]


def rest_pose(data: bytes) -> np.ndarray:
    """(B, 4, 4) bind pose: the inverse of each bone's poseToBone."""
    count, at = _i(data, 240, 2)
    out = []
    for i in range(count):
        m = np.eye(4)
        m[:3, :] = np.array(struct.unpack_from("<12f", data, at + 160 * i + 88)).reshape(3, 4)
        out.append(np.linalg.inv(m))
    return np.array(out)


def stored_rest_pose(data: bytes) -> np.ndarray:
    """(B, 4, 4) world matrices composed from the stored position and x,y,z,w quaternion."""
    count, at = _i(data, 240, 2)
    out = []
    for i in range(count):
        parent = _i(data, at + 160 * i + 4)
        px, py, pz, x, y, z, w = struct.unpack_from("<7f", data, at + 160 * i + 32)
        m = np.eye(4)
        m[:3, :3] = [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
        m[:3, 3] = (px, py, pz)
        out.append(out[parent] @ m if parent >= 0 else m)
    return np.array(out)


def models(mdl: bytes, vtx: bytes | None) -> list[RefModel]:
    """Every model with vertices, body part by body part, with its LOD 0 triangles when ``vtx`` is given."""
    out = []
    parts, bp_at = _i(mdl, 320, 2)
    vtx_parts = _i(vtx, 32) if vtx else 0
    for b in range(parts):
        bp = bp_at + 16 * b
        count, model_rel = _i(mdl, bp + 4), _i(mdl, bp + 12)
        for m in range(count):
            mo = bp + model_rel + 224 * m
            num_meshes, mesh_rel, num_verts, vert_rel = _i(mdl, mo + 136, 4)
            kind = _i(mdl, mo + 156)
            if not num_verts:
                continue
            offset = np.array(struct.unpack_from("<3f", mdl, mo + 160))
            scale = np.array(struct.unpack_from("<3f", mdl, mo + 172))
            bones = weights = None
            positions = np.zeros((num_verts, 3))
            for v in range(num_verts):
                at = mo + vert_rel + v * (44, 12, 8)[kind]
                if kind == 0:
                    positions[v] = struct.unpack_from("<3f", mdl, at + 12)
                elif kind == 1:
                    positions[v] = offset + scale * np.array(struct.unpack_from("<3H", mdl, at))
                else:
                    positions[v] = offset + scale * np.array(struct.unpack_from("<3B", mdl, at)) / 255.0
            if kind == 0:
                raw = [struct.unpack_from("<3B1x3h", mdl, mo + vert_rel + 44 * v) for v in range(num_verts)]
                weights = np.array([r[:3] for r in raw]) / 255.0
                bones = np.array([r[3:] for r in raw])
            tris = np.zeros((0, 3), int)
            if vtx and b < vtx_parts:
                tris = _triangles(mdl, vtx, b, m, mo, mesh_rel, num_meshes)
            out.append(RefModel(positions, tris, bones, weights, b, m))
    return out


def _triangles(mdl: bytes, vtx: bytes, b: int, m: int, mo: int, mesh_rel: int, num_meshes: int) -> np.ndarray:
    bp = _i(vtx, 32) + 8 * b
    model = bp + _i(vtx, bp + 4) + 8 * m
    lod = model + _i(vtx, model + 4)  # LOD 0
    num_vmeshes, mesh_rel_v = _i(vtx, lod, 2)
    tris = []
    for k in range(min(num_meshes, num_vmeshes)):
        first = _i(mdl, mo + mesh_rel + 60 * k + 12)
        me = lod + mesh_rel_v + 8 * k
        groups, group_rel = struct.unpack_from("<H", vtx, me)[0], _i(vtx, me + 4)
        for g in range(groups):
            sg = me + group_rel + 20 * g
            nv, ni, ns, flags = struct.unpack_from("<3HB", vtx, sg)
            v_rel, i_rel, s_rel = _i(vtx, sg + 8, 3)
            if flags & 0x10:
                ids = struct.unpack_from(f"<{nv}H", vtx, sg + v_rel)
            else:
                ids = [struct.unpack_from("<H", vtx, sg + v_rel + 12 * q + 10)[0] for q in range(nv)]
            indices = struct.unpack_from(f"<{ni}H", vtx, sg + i_rel)
            for s in range(ns):
                st = sg + s_rel + 16 * s
                n_idx, first_idx = struct.unpack_from("<2H", vtx, st)
                assert struct.unpack_from("<B", vtx, st + 9)[0] & 1, "not a triangle list"
                for t in range(first_idx, first_idx + n_idx, 3):
                    a, bb, c = (ids[indices[t + j]] + first for j in range(3))
                    tris.append((c, bb, a))
    return np.array(tris, int).reshape(-1, 3)


def canonical(triangles: np.ndarray) -> np.ndarray:
    """Triangles rotated so each starts at its smallest index (winding kept), sorted: comparable as multisets."""
    t = np.asarray(triangles)
    shift = np.argmin(t, axis=1)
    rolled = np.stack([np.roll(row, -s) for row, s in zip(t, shift, strict=True)]) if len(t) else t
    return rolled[np.lexsort(rolled.T[::-1])] if len(t) else rolled


def first_frame(data: bytes, index: int) -> tuple[np.ndarray, np.ndarray]:
    """Frame 0 of animation ``index``: (B, 3) positions and (B, 4) x,y,z,w rotations, from the facts: descriptors of
    72 bytes at the header's offset 268 (count at 264), data offset at 48 of each (relative to it); per bone 32
    bytes: a float and seven int32 stream offsets (relative to the entry: position x y z, quaternion x y z w, 0 =
    the rest value); a stream's first run holds frame 0 (``valid`` and ``total`` bytes, then int16 values);
    position = rest + value * posscale, quaternion component = value * rotscale."""
    count, bone_at = _i(data, 240, 2)
    desc = _i(data, 268) + 72 * index
    base = desc + _i(data, desc + 48)
    positions, rotations = np.zeros((count, 3)), np.zeros((count, 4))
    for b in range(count):
        bone = bone_at + 160 * b
        rest = struct.unpack_from("<7f", data, bone + 32)
        scale = struct.unpack_from("<3f4f", data, bone + 60)
        entry = base + 32 * b
        offsets = struct.unpack_from("<7i", data, entry + 4)
        out = list(rest)
        for c, off in enumerate(offsets):
            if off > 0:
                valid = data[entry + off]
                value = struct.unpack_from("<h", data, entry + off + 2)[0] if valid else 0
                out[c] = (rest[c] if c < 3 else 0.0) + value * scale[c]
        positions[b], rotations[b] = out[:3], out[3:]
    return positions, rotations
