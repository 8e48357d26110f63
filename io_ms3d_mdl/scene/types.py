"""Plain data the Blender builders consume. Arrays are numpy, C-contiguous, in Blender's dtypes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import Warnings

if TYPE_CHECKING:
    from ..formats.source.vtf import BlockImage

Props = dict[str, Any]  # custom properties: str, int, float or lists of them
# What a driver drives or reads: a shape key's value (a name to drive, ("KEY", name) to read) or a custom float
# property of the object (a name to read, ("PROP", name) to drive; created unranged, so never clamped).
DriverTarget = str | tuple[str, str]


@dataclass
class IndexedImage:
    """8-bit palette indices and their RGBA palette (GoldSrc textures): packed as a palette PNG, a quarter of the
    bytes to compress of the same pixels as RGBA."""

    indices: np.ndarray  # (height, width) uint8, top row first
    palette: np.ndarray  # (256, 4) uint8 RGBA

    def rgba(self) -> np.ndarray:
        return self.palette[self.indices]


@dataclass
class ImageRef:
    """A texture as the file names it, and where (if anywhere) it was found."""

    raw_path: str
    resolved_path: str | None  # None: not found on disk
    loadable: bool = True  # Blender can read the file itself (False for VTF: without pixels it is a placeholder)
    # Block-compressed data kept as stored (e.g. a DXT or BC7 VTF): Blender decodes it itself, and ``pixels``
    # decodes it in numpy only when asked.
    blocks: BlockImage | None = None
    decoded: np.ndarray | None = field(default=None, repr=False)
    indexed: IndexedImage | None = field(default=None, repr=False)  # palette pixels, decoded only when asked

    @property
    def pixels(self) -> np.ndarray | None:
        """(height, width, 4) uint8 RGBA, top row first, when the texture was decoded (or has blocks to decode)."""
        if self.decoded is None and self.blocks is not None:
            self.decoded = self.blocks.decode()
        if self.decoded is None and self.indexed is not None:
            self.decoded = self.indexed.rgba()
        return self.decoded

    @pixels.setter
    def pixels(self, value: np.ndarray | None) -> None:
        self.decoded = value


@dataclass
class MaterialData:
    name: str
    base_color: tuple[float, float, float]
    alpha: float = 1.0  # opacity
    roughness: float = 0.5
    specular_level: float = 0.5  # Principled "Specular IOR Level"
    specular_tint: tuple[float, float, float] = (1.0, 1.0, 1.0)
    emission_color: tuple[float, float, float] = (0.0, 0.0, 0.0)
    emission_strength: float = 0.0
    base_texture: ImageRef | None = None
    alpha_texture: ImageRef | None = None
    use_texture_alpha: bool = False  # the base texture's alpha channel is the opacity
    blend: bool = False  # sorted transparency (translucent) rather than dithered
    alpha_clip: float | None = None  # alpha test threshold
    normal_texture: ImageRef | None = None  # a DirectX-style normal map (green points down), as Source uses
    emission_from_texture_alpha: bool = False  # self-illumination masked by the base texture's alpha
    double_sided: bool = True
    additive: bool = False  # adds its colour to what lies behind (GoldSrc's additive textures)
    reflection_mapped: bool = False  # the base texture is looked up by the view's reflection (GoldSrc's chrome)
    props: Props = field(default_factory=dict)


@dataclass
class MeshData:
    """A triangle mesh. Per-corner arrays are ordered like ``triangles.ravel()``."""

    name: str
    positions: np.ndarray  # (V, 3) float32
    triangles: np.ndarray  # (T, 3) int32
    uvs: np.ndarray | None = None  # (T*3, 2) float32
    normals: np.ndarray | None = None  # (T*3, 3) float32; zero rows mean "let Blender compute"
    # (V, 3) float32 instead of ``normals`` when the format stores one normal per vertex (Source's VVD): set as
    # they are, without a per-corner copy or a check that every corner of a vertex agrees.
    vertex_normals: np.ndarray | None = None
    material_indices: np.ndarray | None = None  # (T,) int32 into ``materials``
    materials: list[int | None] = field(default_factory=list)  # slot -> SceneData.materials index (None: empty)
    sharp_edges: np.ndarray | None = None  # (E, 2) int32 vertex pairs
    source_vertices: np.ndarray | None = None  # (V,) int32: index of each vertex in the file's vertex list
    material_refs: list[int] | None = None  # per slot: the skin-table column it shows (formats with skins)
    shape_keys: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (name, (V, 3) float32 positions)
    colors: np.ndarray | None = None  # (V, 4) uint8 sRGB RGBA per vertex (Titanfall's .vvc)
    uvs2: np.ndarray | None = None  # (T*3, 2) float32: a second UV map

    def corner_normals(self) -> np.ndarray | None:
        """Per-corner normals, whichever form the mesh holds them in."""
        if self.vertex_normals is not None:
            return self.vertex_normals[np.asarray(self.triangles).ravel()]
        return self.normals


@dataclass
class SkinData:
    """Up to four influences per vertex (rows follow ``MeshData.positions``); index -1 means unused."""

    bone_indices: np.ndarray  # (V, 4) int32 into SkeletonData.bones
    weights: np.ndarray  # (V, 4) float32, each row summing to 1 or all zero (unweighted vertex)


@dataclass
class ObjectData:
    name: str
    mesh: MeshData
    props: Props = field(default_factory=dict)
    skin: SkinData | None = None
    # Custom float properties with their range, and drivers: (driven, simple expression, {variable: what it reads}).
    controls: dict[str, tuple[float, float]] = field(default_factory=dict)
    drivers: list[tuple[DriverTarget, str, dict[str, DriverTarget]]] = field(default_factory=list)
    # Follows this bone (rigidly, no skin weights), keeping its armature-space placement: collision solids.
    bone: str | None = None
    display: str = "TEXTURED"  # Object.display_type ("WIRE" for collision solids, so they never hide the model)
    collision: bool = False  # a collision solid: if Blender fails to build one, only the collision is lost


@dataclass
class EmptyData:
    """An empty (attachment point, hitbox) placed in armature space, optionally following a bone."""

    name: str
    matrix: np.ndarray  # (4, 4) in armature space
    bone: str | None = None
    display: str = "PLAIN_AXES"  # Object.empty_display_type
    size: float = 1.0
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    collection: str = ""  # name of the CollectionData it goes into ("" = the model's collection)
    props: Props = field(default_factory=dict)


@dataclass
class CollectionData:
    """A child collection of the model's collection (e.g. a Source body part, or one of its options)."""

    name: str
    objects: list[int] = field(default_factory=list)  # indices into SceneData.objects
    children: list[CollectionData] = field(default_factory=list)
    hidden: bool = False  # hidden in viewport and render (other choices of a body group)
    props: Props = field(default_factory=dict)
    collision: bool = False  # the collision solids' collection


@dataclass
class BoneData:
    name: str  # unique within the skeleton
    parent: int  # index of an earlier bone, or -1
    matrix: np.ndarray  # (4, 4) rest matrix in armature space; rotation orthonormal, bone +Y along the bone
    length: float
    color: tuple[float, float, float] | None = None
    props: Props = field(default_factory=dict)


@dataclass
class SkeletonData:
    name: str
    bones: list[BoneData]  # parents before children


@dataclass
class BoneChannels:
    """Keys of one pose bone, in the bone's rest frame (what Blender's pose channels hold)."""

    bone: int
    rotation_frames: np.ndarray  # (K,) float
    rotations: np.ndarray  # (K, 4) quaternions (w, x, y, z), sign-continuous
    location_frames: np.ndarray  # (L,)
    locations: np.ndarray  # (L, 3)


@dataclass
class PackedKeys:
    """An action's keys as a converter laid them out: every channel's rotation keys end to end, channel after channel
    in ``ActionData.channels``' order, then the same for its locations, with each channel's key counts. The channels
    are views of these arrays (a change made in place shows in both), so the builder and the finite guard take the
    keys whole, a few arrays an action instead of four per bone."""

    rotation_frames: np.ndarray  # (N,)
    rotations: np.ndarray  # (N, 4)
    rotation_counts: np.ndarray  # (C,) int: keys of each channel
    location_frames: np.ndarray  # (M,)
    locations: np.ndarray  # (M, 3)
    location_counts: np.ndarray  # (C,)


@dataclass
class ClipData:
    """A named frame range (MilkShape users list them in the model comment)."""

    name: str
    start: float
    end: float
    loop: bool = False


@dataclass
class ActionData:
    name: str
    channels: list[BoneChannels]
    frame_range: tuple[float, float]
    additive: bool = False  # a delta animation: plays on top of another (NLA "Combine")
    markers: list[tuple[str, float]] = field(default_factory=list)  # (name, frame): events, shown as pose markers
    props: Props = field(default_factory=dict)
    keys_changed: bool | None = None  # read back from Blender: keys other than the import made (None: not known)
    frame_step: float | None = None  # an import's: Blender frames per file frame (kept with the keys' fingerprint)
    packed: PackedKeys | None = None  # the channels' keys whole, when a converter made the channels views of them


@dataclass
class AnimationEntry:
    """One animation a model makes available (its own, its ``.ani`` blocks', its includes'), built or not."""

    name: str
    frames: int
    fps: float
    delta: bool
    activity: str = ""  # of the sequence that plays it first
    source: str = ""  # the ``$includemodel`` it comes from ("" for the model's own)
    built: bool = False  # an action was made for it at import


@dataclass
class SceneData:
    """One imported model: its objects go into one collection named ``name``."""

    name: str
    objects: list[ObjectData] = field(default_factory=list)
    materials: list[MaterialData] = field(default_factory=list)
    props: Props = field(default_factory=dict)
    warnings: Warnings = field(default_factory=Warnings)
    skeleton: SkeletonData | None = None
    actions: list[ActionData] = field(default_factory=list)
    clips: list[ClipData] = field(default_factory=list)
    fps: float | None = None  # the scene frame rate the animation wants
    frame_range: tuple[float, float] | None = None  # a scene range that holds every key
    collections: list[CollectionData] = field(default_factory=list)  # objects not listed go in the top collection
    empties: list[EmptyData] = field(default_factory=list)
    animations: list[AnimationEntry] = field(default_factory=list)  # every animation on offer, built or not
    root_matrix: np.ndarray | None = None  # (3, 3) rotation of the whole model (its top-level objects), if any
    # Skin families: family → (skin-table column → index into ``materials``); meshes name their column per slot
    # in MeshData.material_refs so the active family can be switched after import.
    skin_families: list[list[int]] = field(default_factory=list)
    # Triangles dropped for repeating a vertex (no area; real models are full of them): counted for the report and
    # the model's ``source_degenerate_triangles``, not warned about.
    degenerate_triangles: int = 0

    @property
    def vertex_count(self) -> int:
        return sum(len(o.mesh.positions) for o in self.objects)

    @property
    def triangle_count(self) -> int:
        return sum(len(o.mesh.triangles) for o in self.objects)
