"""MilkShape 3D (.ms3d) versions 3 and 4, including the 1.7/1.8 extended blocks."""

from .model import Ms3dGroup, Ms3dJoint, Ms3dMaterial, Ms3dModel, Ms3dVertexExtra
from .reader import read_ms3d, read_ms3d_bytes

__all__ = [
    "Ms3dGroup",
    "Ms3dJoint",
    "Ms3dMaterial",
    "Ms3dModel",
    "Ms3dVertexExtra",
    "read_ms3d",
    "read_ms3d_bytes",
]
