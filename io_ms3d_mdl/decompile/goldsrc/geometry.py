"""A GoldSrc body-part model as the reference SMD ``studiomdl`` would compile back into it.

What ``studiomdl`` (the HL SDK's) does to a reference SMD, and how each step is undone here:
- Each vertex and normal is moved into its bone's space through the SMD's own skeleton; the bones' stored default
  values are that skeleton, so a vertex goes back to model space through the bones' rest matrices (parents'
  values, then its own, ``T·Rz·Ry·Rx``). Positions were cut to two decimals in bone space and normals within 2° of
  each other merged per bone and texture: that rounding is in the file and cannot be undone.
- The triangles' corners were reversed (``flip_triangles``); the command lists keep that order, so each triangle's
  corners are reversed back.
- Texture coordinates became texels ``s = trunc(u·(width-1))`` and ``t = (height-1) - trunc(v·(height-1))`` of a
  texture cropped to the texels used (so the stored texture is the whole range). The SMD gets back a ``u`` and ``v``
  inside each texel (a quarter texel from its edges, the nearer edge at the ends of the range) so that a recompile
  truncates to the same texel, its texture-packing pass sees a range narrower than one texture (it moves nothing)
  and the cropped size comes out equal to the stored one.
- Unused bones were dropped (nothing to restore); every vertex has one bone (weight 1).
"""

from __future__ import annotations

import numpy as np

from ...formats.goldsrc.model import GsFile, GsModel
from ...formats.smd import SmdTriangles

FALLBACK_SIZE = 256  # texels assumed for a texture the model does not hold (its T.mdl was not found)


def texel_to_uv(texel: np.ndarray, size: np.ndarray) -> np.ndarray:
    """A coordinate inside texel ``texel`` of a ``size``-texel span that ``trunc(coordinate·(size-1))`` reads back
    as ``texel``: the texel plus ¾ at its start falling to ¼ at its end, over ``size - 1``."""
    texel = np.asarray(texel, dtype=np.float64)
    span = np.maximum(np.asarray(size, dtype=np.float64) - 1.0, 1.0)
    return (texel + 0.75 - 0.5 * texel / span) / span


def uv_to_texel(uv: np.ndarray, size: np.ndarray) -> np.ndarray:
    """What ``studiomdl`` makes of an SMD coordinate: ``trunc(uv·(size-1))`` (the tests' model of the compiler)."""
    return np.trunc(np.asarray(uv, dtype=np.float64) * (np.asarray(size, dtype=np.float64) - 1.0))


def model_triangles(
    gs: GsFile, model: GsModel, world: np.ndarray, materials: list[str], sizes: np.ndarray
) -> tuple[SmdTriangles, int]:
    """The triangles of ``model`` in model space at rest, and how many degenerate ones (a corner repeated) were left
    out. ``world``: (B, 4, 4) rest matrices; ``materials``/``sizes``: per skin-table column, the SMD material name
    and the (width, height) of family 0's texture."""
    meshes = [mesh for mesh in model.meshes if len(mesh.corners)]
    if not meshes:
        return _empty(materials), 0
    corners = np.concatenate([mesh.corners for mesh in meshes]).astype(np.int64).reshape(-1, 3, 4)
    refs = np.repeat([mesh.skinref for mesh in meshes], [len(mesh.corners) // 3 for mesh in meshes])
    corners = corners[:, ::-1]  # the SMD's corner order (studiomdl reversed it)
    vertex = corners[..., 0]
    solid = (vertex[:, 0] != vertex[:, 1]) & (vertex[:, 1] != vertex[:, 2]) & (vertex[:, 0] != vertex[:, 2])
    dropped = int((~solid).sum())
    corners, refs = corners[solid], refs[solid]
    refs = np.where((refs >= 0) & (refs < len(materials)), refs, len(materials))  # an unknown column: its own name
    bones = model.vertex_bones.astype(np.int64)[corners[..., 0]]
    rest = world[bones]
    local = model.vertices.astype(np.float64)[corners[..., 0]]
    positions = np.einsum("tcij,tcj->tci", rest[..., :3, :3], local) + rest[..., :3, 3]
    turn = world[model.normal_bones.astype(np.int64)[corners[..., 1]], :3, :3]
    normals = np.einsum("tcij,tcj->tci", turn, model.normals.astype(np.float64)[corners[..., 1]])
    size = np.concatenate([sizes, [[FALLBACK_SIZE, FALLBACK_SIZE]]])[refs][:, None, :]  # (T, 1, 2)
    uvs = np.empty((len(corners), 3, 2))
    uvs[..., 0] = texel_to_uv(corners[..., 2], size[..., 0])
    uvs[..., 1] = texel_to_uv(size[..., 1] - 1 - corners[..., 3], size[..., 1])
    names = [*materials, "missing_texture.bmp"]
    return SmdTriangles(
        materials=names,
        material_index=refs,
        positions=positions,
        normals=normals,
        uvs=uvs,
        bones=bones[..., None],
        weights=np.ones((len(corners), 3, 1)),
    ), dropped


def _empty(materials: list[str]) -> SmdTriangles:
    return SmdTriangles(
        materials=list(materials),
        material_index=np.zeros(0, np.int64),
        positions=np.zeros((0, 3, 3)),
        normals=np.zeros((0, 3, 3)),
        uvs=np.zeros((0, 3, 2)),
        bones=np.zeros((0, 3, 1), np.int64),
        weights=np.zeros((0, 3, 1)),
    )
