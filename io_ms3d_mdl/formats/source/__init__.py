"""Valve Source studio models: ``.mdl`` (versions 44–49, Titanfall's 52 and 53) with their ``.vvd`` and ``.vtx``
companions (inside the ``.mdl`` in v53)."""

from .mdl import read_mdl, read_mdl_bytes
from .model import MdlFile, VtxFile, VvdFile
from .sidecars import find_ani, find_sidecars, read_mesh_companions, read_physics_companion
from .vtx import read_vtx, read_vtx_bytes
from .vvd import read_vvd, read_vvd_bytes

__all__ = [
    "MdlFile",
    "VtxFile",
    "VvdFile",
    "find_ani",
    "find_sidecars",
    "read_mdl",
    "read_mdl_bytes",
    "read_mesh_companions",
    "read_physics_companion",
    "read_vtx",
    "read_vtx_bytes",
    "read_vvd",
    "read_vvd_bytes",
]
