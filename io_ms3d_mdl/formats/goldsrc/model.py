"""What a GoldSrc model holds, as read (no conversion): the records of ``structs.py`` gathered per body part,
model and sequence."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings


@dataclass
class GsTexture:
    name: str
    flags: int
    width: int
    height: int
    indices: np.ndarray | None  # (height, width) uint8 palette indices; None when the data is not in the file
    palette: np.ndarray | None  # (256, 3) uint8 RGB

    def rgba_palette(self) -> np.ndarray | None:
        """(256, 4) uint8: the palette with alpha; a masked texture's entry 255 is transparent."""
        if self.palette is None:
            return None
        out = np.empty((256, 4), dtype=np.uint8)
        out[:, :3] = self.palette
        out[:, 3] = 255
        if self.flags & 64:
            out[255, 3] = 0
        return out

    def rgba(self) -> np.ndarray | None:
        """(height, width, 4) uint8, top row first; a masked texture's palette index 255 is transparent."""
        if self.indices is None or self.palette is None:
            return None
        rgba = np.empty((*self.indices.shape, 4), dtype=np.uint8)
        rgba[..., :3] = self.palette[self.indices]
        rgba[..., 3] = 255
        if self.flags & 64:
            rgba[..., 3][self.indices == 255] = 0
        return rgba


@dataclass
class GsMesh:
    skinref: int
    # One row per corner, three corners a triangle (as the command lists give them, before any winding change):
    # vertex index, normal index, s, t (texels).
    corners: np.ndarray  # (T*3, 4) int16


@dataclass
class GsModel:
    name: str
    vertices: np.ndarray  # (V, 3) float32, in the space of the vertex's bone
    vertex_bones: np.ndarray  # (V,) uint8
    normals: np.ndarray  # (N, 3) float32, in the space of the normal's bone
    normal_bones: np.ndarray  # (N,) uint8
    meshes: list[GsMesh] = field(default_factory=list)


@dataclass
class GsBodyPart:
    name: str
    base: int
    models: list[GsModel]


@dataclass
class GsEvent:
    frame: int
    event: int
    type: int
    options: str


@dataclass
class GsSequence:
    label: str
    fps: float
    flags: int
    activity: int
    actweight: int
    numframes: int
    motiontype: int
    motionbone: int
    linearmovement: tuple[float, float, float]
    numblends: int
    animindex: int
    seqgroup: int
    blendtype: tuple[int, int]
    blendstart: tuple[float, float]
    blendend: tuple[float, float]
    events: list[GsEvent]
    pivots: np.ndarray  # (P,) structs.PIVOT
    offset: int  # of the record in the file

    @property
    def looping(self) -> bool:
        return bool(self.flags & 1)


@dataclass
class GsSequenceGroup:
    label: str
    name: str  # the file the game loads (group 0: the model itself)


@dataclass
class GsAttachment:
    name: str
    type: int
    bone: int
    origin: np.ndarray  # (3,) in the bone's space


@dataclass
class GsFile:
    path: str | None
    name: str
    flags: int
    eye_position: tuple[float, float, float]
    bones: np.ndarray  # structs.BONE records, parents before children
    bone_names: list[str]
    controllers: np.ndarray  # structs.BONE_CONTROLLER
    hitboxes: np.ndarray  # structs.HITBOX
    sequences: list[GsSequence]
    groups: list[GsSequenceGroup]
    textures: list[GsTexture]
    skins: np.ndarray  # (families, refs) int16: skin-table column -> texture
    body_parts: list[GsBodyPart]
    attachments: list[GsAttachment]
    data: bytes  # the file (animation data of sequence group 0 is read from it)
    texture_file: str | None = None  # the ``<name>T.mdl`` the textures came from
    # Sequence group -> (bytes, path) of its file, for the groups that were found and read; group 0 is the model.
    group_data: dict[int, tuple[bytes, str]] = field(default_factory=dict)
    warnings: Warnings = field(default_factory=Warnings)
