"""What an MS3D file holds, as read: records with numpy arrays, names already decoded, nothing interpreted yet."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings


@dataclass
class Ms3dGroup:
    name: str
    flags: int
    triangle_indices: np.ndarray  # (n,) uint16 into Ms3dModel.triangles
    material_index: int  # -1 = none
    comment: str | None = None


@dataclass
class Ms3dMaterial:
    name: str
    ambient: np.ndarray  # (4,) float32
    diffuse: np.ndarray
    specular: np.ndarray
    emissive: np.ndarray
    shininess: float  # 0..128
    transparency: float  # really opacity: 1.0 is opaque (notes §0.10)
    mode: int
    texture: str
    alphamap: str
    comment: str | None = None


@dataclass
class Ms3dJoint:
    name: str
    parent_name: str
    flags: int
    rotation: np.ndarray  # (3,) Euler radians, R = Rz·Ry·Rx
    position: np.ndarray  # (3,)
    rotation_keys: np.ndarray  # structured KEY records: time (s), value (3,)
    position_keys: np.ndarray
    comment: str | None = None
    color: np.ndarray | None = None  # (3,) from the joint extra block


@dataclass
class Ms3dVertexExtra:
    sub_version: int
    bone_ids: np.ndarray  # (n, 3) int16 joint indices; -1 = none (255 as stored)
    weights: np.ndarray  # (n, 3) uint8, as stored (scale depends on sub_version)
    extra: np.ndarray | None  # (n,) uint32 (sv2+)
    extra2: np.ndarray | None  # (n,) uint32 (sv3)


@dataclass
class Ms3dModelExtra:
    joint_size: float
    transparency_mode: int
    alpha_ref: float


@dataclass
class Ms3dModel:
    path: str | None
    version: int
    vertices: np.ndarray  # structured VERTEX records
    triangles: np.ndarray  # structured TRIANGLE records
    groups: list[Ms3dGroup]
    materials: list[Ms3dMaterial]
    fps: float
    current_time: float
    total_frames: int
    joints: list[Ms3dJoint]
    model_comment: str | None = None
    vertex_extra: Ms3dVertexExtra | None = None
    model_extra: Ms3dModelExtra | None = None
    extended_blocks: list[str] = field(default_factory=list)  # which optional blocks were present
    warnings: Warnings = field(default_factory=Warnings)
