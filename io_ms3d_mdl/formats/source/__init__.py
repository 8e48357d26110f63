"""Valve Source studio models: ``.mdl`` (versions 44–49) with their ``.vvd`` and ``.vtx`` companions."""

from .mdl import read_mdl, read_mdl_bytes
from .model import MdlFile, VtxFile, VvdFile
from .sidecars import find_ani, find_sidecars
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
    "read_vtx",
    "read_vtx_bytes",
    "read_vvd",
    "read_vvd_bytes",
]
