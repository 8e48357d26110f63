"""What a Source model's files hold, as read: plain records with numpy arrays; nothing assembled yet."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings


@dataclass
class MdlFlex:
    """One flex (shape) on one mesh: vertex deltas for a flex descriptor, split by side when ``pair`` is set."""

    desc: int  # index into MdlFile.flex_names
    pair: int  # the right-hand descriptor of a stereo flex, or 0
    indices: np.ndarray  # (N,) mesh-relative vertex indices
    deltas: np.ndarray  # (N, 3) float32 position deltas (decoded from fp16; Bloodlines: direction and length)
    sides: np.ndarray  # (N,) float32 side/255: the engine weighs a stereo vertex (1 - side)·desc + side·pair
    # (4,) float32: the descriptor's weights where this shape fades in, is whole, and fades out again (0, 1, 1, 1
    # for most flexes; an eyelid's three shapes share one descriptor and split its range between them)
    targets: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 1.0, 1.0], np.float32))


@dataclass
class MdlEyeball:
    name: str
    bone: int
    origin: np.ndarray  # (3,) in the bone's space
    radius: float


@dataclass
class MdlFlexRule:
    flex: int
    ops: list[tuple[int, float]]  # reverse-polish program: (op, operand: an index or a constant)


@dataclass
class MdlMesh:
    material: int  # a column of the skin table, not a texture index
    num_vertices: int
    vertex_offset: int  # a COUNT of vertices from the model's first vertex
    material_type: int  # 1: an eyeball mesh
    material_param: int
    num_flexes: int
    lod_vertex_counts: np.ndarray  # (8,)
    flexes: list[MdlFlex] = field(default_factory=list)


@dataclass
class MdlModel:
    name: str
    num_vertices: int  # 0: a blank bodygroup option
    vertex_index: int  # first vertex in the VVD pool (the file stores bytes; already divided by 48)
    meshes: list[MdlMesh]
    num_eyeballs: int
    eyeballs: list[MdlEyeball] = field(default_factory=list)


@dataclass
class MdlBodyPart:
    name: str
    base: int  # bodygroup stride: option = (body / base) % len(models)
    models: list[MdlModel]


@dataclass
class MdlAttachment:
    name: str
    bone: int
    matrix: np.ndarray  # (3, 4) in the bone's space
    flags: int


@dataclass
class MdlHitbox:
    bone: int
    group: int
    bbmin: np.ndarray
    bbmax: np.ndarray
    name: str


@dataclass
class MdlAnimation:
    """An animation descriptor; ``formats.source.animation`` decodes the data it points at."""

    name: str
    fps: float
    flags: int
    num_frames: int
    anim_block: int
    section_frames: int
    offset: int = 0  # absolute position of the descriptor (its indices are relative to it)
    anim_index: int = 0
    section_index: int = 0

    @property
    def is_delta(self) -> bool:
        return bool(self.flags & 0x04)


@dataclass
class MdlEvent:
    cycle: float  # 0..1 through the sequence
    event: int
    name: str  # the event's name (new-style events) or its options string


@dataclass
class MdlSequence:
    name: str
    activity: str
    flags: int
    animations: list[int]  # animation indices of its blend grid (row-major)
    events: list[MdlEvent]


@dataclass
class MdlFile:
    path: str | None
    version: int
    checksum: int
    name: str
    flags: int
    bones: np.ndarray  # structured BONE records
    bone_names: list[str]
    body_parts: list[MdlBodyPart]
    textures: list[str]
    cd_materials: list[str]
    skins: np.ndarray  # (families, refs) int16
    attachments: list[MdlAttachment]
    hitbox_sets: dict[str, list[MdlHitbox]]
    include_models: list[str]
    animations: list[MdlAnimation]
    sequences: list[MdlSequence]
    flex_names: list[str]
    anim_block_name: str
    num_anim_blocks: int
    anim_blocks: np.ndarray  # (blocks, 2) int32: (datastart, dataend) in the .ani file
    data: bytes = b""  # the whole file: animation data is decoded lazily from it
    flex_controllers: list[tuple[str, str, float, float]] = field(default_factory=list)  # (name, type, min, max)
    flex_rules: list[MdlFlexRule] = field(default_factory=list)
    warnings: Warnings = field(default_factory=Warnings)
    # v53 (Titanfall 2) keeps its .vtx/.vvd/.vvc/.phy inside the .mdl: name → (offset, size) in ``data``, checked
    # against the file; ``formats.source.mdl.embedded_bytes`` slices one out
    embedded: dict[str, tuple[int, int]] = field(default_factory=dict)
    # v2531 (Bloodlines) has no .vvd: each model's own vertices, decoded into a VVD-shaped pool
    own_vertices: VvdFile | None = None

    @property
    def is_static_prop(self) -> bool:
        return bool(self.flags & 0x10)


@dataclass
class VvdFile:
    path: str | None
    checksum: int
    num_lods: int
    lod_vertex_counts: np.ndarray  # (8,)
    vertices: np.ndarray  # structured VVD_VERTEX records, fixups replayed for root LOD 0
    tangents: np.ndarray | None  # (N, 4) float32, permuted like the vertices
    order: np.ndarray | None = None  # the disk index of each pool vertex (the fixup replay), None: disk order
    colors: np.ndarray | None = None  # (N, 4) uint8 sRGB RGBA from Titanfall's .vvc, permuted like the vertices
    uv2: np.ndarray | None = None  # (N, 2) float32 second UV set from the .vvc, permuted like the vertices


@dataclass
class VtxStripGroup:
    vertices: np.ndarray  # orig mesh vertex ids (uint16) of the group's Vertex_t array
    triangles: np.ndarray  # (T, 3) indices into ``vertices`` (from the TRILIST strips)
    flags: int


@dataclass
class VtxMesh:
    strip_groups: list[VtxStripGroup]
    flags: int


@dataclass
class VtxLod:
    meshes: list[VtxMesh]
    switch_point: float


@dataclass
class VtxFile:
    path: str | None
    checksum: int
    num_lods: int
    header_size: int  # 25 or 33: the strip-group header size found in the layout
    body_parts: list[list[list[VtxLod | None]]]  # body part → model → LOD (None: not read, see ``read_vtx``)
