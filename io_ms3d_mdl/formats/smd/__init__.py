"""Studiomdl's SMD and VTA text sources, written from numpy arrays (see ``writer`` for the stable API)."""

from .writer import SmdSkeleton, SmdStats, SmdTriangles, smd_name, write_smd, write_vta

__all__ = ["SmdSkeleton", "SmdStats", "SmdTriangles", "smd_name", "write_smd", "write_vta"]
