"""A minimal Source model writer for tests: ``.mdl`` + ``.vvd`` + ``.vtx`` with the corners real files have
(blank body-group options, several skin families, LOD fixups, 25- or 33-byte VTX headers, vertices repeated
across strip groups, mismatched checksums). It writes what it is given and validates nothing."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from anim_rle import encode_rle

from io_ms3d_mdl.formats.source import structs as S


@dataclass
class SVertex:
    pos: tuple[float, float, float]
    normal: tuple[float, float, float] = (0.0, 0.0, 1.0)
    uv: tuple[float, float] = (0.0, 0.0)
    bones: tuple[int, ...] = (0,)
    weights: tuple[float, ...] = (1.0,)


@dataclass
class SMesh:
    material: int  # skin-table column
    vertices: list[SVertex]
    triangles: list[tuple[int, int, int]]  # counter-clockwise (Blender's winding); written clockwise as Source does
    strip_groups: int = 1  # split the triangles over this many groups, repeating shared vertices in each
    flexes: list[SFlex] = field(default_factory=list)


@dataclass
class SFlex:
    """One mstudioflex_t of a mesh: ``deltas`` (fp16 when stored) of the mesh's vertices ``indices``."""

    desc: int  # index into SourceSpec.flex_names
    indices: list[int]
    deltas: list[tuple[float, float, float]]
    targets: tuple[float, float, float, float] = (0.0, 1.0, 1.0, 1.0)
    pair: int = 0


@dataclass
class SEyeball:
    """One mstudioeyeball_t; the lid fields as studiomdl's ``eyelid`` lines fill them (-1: no eyelid)."""

    name: str
    bone: int
    org: tuple[float, float, float]
    radius: float = 0.5
    texture: int = 0
    iris_scale: float = 1.0
    upper_lid: int = -1
    upper: tuple[int, int, int] = (-1, -1, -1)  # lowerer, neutral, raiser flex descriptors
    upper_targets: tuple[float, float, float] = (0.0, 0.0, 0.0)
    lower_lid: int = -1
    lower: tuple[int, int, int] = (-1, -1, -1)
    lower_targets: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass
class SModel:
    name: str
    meshes: list[SMesh] = field(default_factory=list)  # no meshes: a blank option
    eyeballs: list[SEyeball] = field(default_factory=list)


@dataclass
class SBodyPart:
    name: str
    models: list[SModel]


@dataclass
class SBone:
    name: str
    parent: int = -1
    pos: tuple[float, float, float] = (0.0, 0.0, 0.0)
    quat: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)  # x, y, z, w


@dataclass
class SAttachment:
    name: str
    bone: int
    matrix: tuple = ((1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0))


@dataclass
class SNode:
    """One bone's data in an animation. ``rot``: ("q48"|"q64", (w, x, y, z)) or ("rle", (3, frames) ints times
    rotscale); ``pos``: ("v48", (x, y, z)) or ("rle", (3, frames) ints times posscale); None: not stored.
    v53 only: ``scale`` like ``pos`` (RLE times the spec's ``scalescale``), an RLE axis of None has no stream
    (offset 0), and ``posscale`` is the header's own (None: the spec's)."""

    bone: int
    rot: tuple | None = None
    pos: tuple | None = None
    delta: bool = False
    scale: tuple | None = None
    posscale: float | None = None


@dataclass
class SAnimation:
    name: str
    frames: int
    nodes: list[SNode]
    fps: float = 30.0
    delta: bool = False
    section_frames: int = 0  # > 0: sectioned (each section restarts the RLE streams; the last frame alone)
    frame_bones: dict[int, SFrameBone] | None = None  # set: frame-major (STUDIO_FRAMEANIM, v49), nodes unused
    in_ani: bool = False  # the data goes to the .ani file (block 1, see write_ani), not the .mdl


@dataclass
class SourceSpec:
    body_parts: list[SBodyPart]
    bones: list[SBone] = field(default_factory=lambda: [SBone("root")])
    textures: list[str] = field(default_factory=lambda: ["tex0"])
    cd_materials: list[str] = field(default_factory=lambda: ["models\\test\\"])
    skins: list[list[int]] = field(default_factory=lambda: [[0]])
    attachments: list[SAttachment] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    version: int = 48
    name: str = "test/model.mdl"
    checksum: int = 0x1234
    vvd_checksum: int | None = None
    vtx_checksum: int | None = None
    strip_header: int = 25  # 25 or 33
    vtx_lods: int = 1  # every LOD repeats LOD 0's triangles
    shuffle_with_fixups: bool = False  # store each mesh's vertices in two swapped runs and a fixup table
    static: bool = False
    hdr2: bool = True
    animations: list[SAnimation] = field(default_factory=list)
    rotscale: float = 1.0 / 1024  # every bone's rotscale/posscale (per axis)
    posscale: float = 1.0 / 64
    scalescale: float = 1.0 / 1024  # v53 bones: the multiplier of scale streams
    # Titanfall: version=52 writes 44–49 records (give write_source vtx_suffix=".dx11.vtx"); version=53 writes its
    # own header, bones, textures and animation descriptors, with the .vtx/.vvd (and these) inside the .mdl
    vertex_colors: bool = False  # also write a .vvc (embedded in v53)
    embedded_phy: bytes = b""  # v53: physics data to embed as is
    flex_names: list[str] = field(default_factory=list)  # flex descriptors


class Blob:
    def __init__(self, size: int = 0) -> None:
        self.buf = bytearray(size)

    def add(self, data: bytes, align: int = 4) -> int:
        self.buf += b"\0" * (-len(self.buf) % align)
        offset = len(self.buf)
        self.buf += data
        return offset

    def put(self, offset: int, data: bytes) -> None:
        self.buf[offset : offset + len(data)] = data

    def string(self, text: str) -> int:
        return self.add(text.encode("latin-1") + b"\0", 1)


def _records(dtype: np.dtype, count: int) -> np.ndarray:
    return np.zeros(count, dtype=dtype)


def pool_of(spec: SourceSpec) -> list[SVertex]:
    return [v for bp in spec.body_parts for m in bp.models for mesh in m.meshes for v in mesh.vertices]


def write_mdl(spec: SourceSpec) -> bytes:
    layout = S.LAYOUTS.get(spec.version, S.LAYOUT_44)
    blob = Blob(layout.header.itemsize)
    header = _records(layout.header, 1)
    h = header[0]
    h["id"], h["version"], h["checksum"] = S.MDL_MAGIC, spec.version, spec.checksum
    h["name"] = spec.name.encode()[:63].ljust(64, b"\0")
    h["flags"] = S_STATIC if spec.static else 0
    if spec.hdr2 and "studiohdr2index" in layout.header.names:
        h["studiohdr2index"] = blob.add(bytes(S.STUDIOHDR2.itemsize))
    bones = _records(layout.bone, len(spec.bones))
    if "scale" in layout.bone.names:
        bones["scale"], bones["scalescale"] = 1.0, spec.scalescale
    h["numbones"], h["boneindex"] = len(spec.bones), blob.add(bytes(bones.nbytes))
    for i, b in enumerate(spec.bones):
        bones[i]["parent"], bones[i]["pos"], bones[i]["quat"] = b.parent, b.pos, b.quat
        bones[i]["rot"] = _quat_to_euler(b.quat)
        bones[i]["rotscale"], bones[i]["posscale"] = spec.rotscale, spec.posscale
        bones[i]["posetobone"] = np.eye(4)[:3]
    body_parts = _records(S.BODYPART, len(spec.body_parts))
    h["numbodyparts"], h["bodypartindex"] = len(spec.body_parts), blob.add(bytes(body_parts.nbytes))
    first_vertex = 0
    for b, bp in enumerate(spec.body_parts):
        bp_off = int(h["bodypartindex"]) + b * S.BODYPART.itemsize
        models = _records(S.MODEL, len(bp.models))
        models_off = blob.add(bytes(models.nbytes))
        body_parts[b]["nummodels"], body_parts[b]["modelindex"] = len(bp.models), models_off - bp_off
        body_parts[b]["base"] = int(np.prod([max(len(p.models), 1) for p in spec.body_parts[:b]]))
        body_parts[b]["sznameindex"] = blob.string(bp.name) - bp_off
        for m, model in enumerate(bp.models):
            m_off = models_off + m * S.MODEL.itemsize
            meshes = _records(S.MESH, len(model.meshes))
            meshes_off = blob.add(bytes(meshes.nbytes)) if model.meshes else 0
            rec = models[m]
            rec["name"] = model.name.encode()[:63].ljust(64, b"\0")
            rec["nummeshes"], rec["meshindex"] = len(model.meshes), (meshes_off - m_off) if model.meshes else 0
            count = sum(len(mesh.vertices) for mesh in model.meshes)
            rec["numvertices"], rec["vertexindex"] = count, first_vertex * S.VERTEX_SIZE
            offset = 0
            for i, mesh in enumerate(model.meshes):
                meshes[i]["material"], meshes[i]["numvertices"] = mesh.material, len(mesh.vertices)
                meshes[i]["vertexoffset"] = offset
                meshes[i]["modelindex"] = m_off - (meshes_off + i * S.MESH.itemsize)
                meshes[i]["numlodvertexes"][:] = len(mesh.vertices)
                if mesh.flexes:
                    mesh_off = meshes_off + i * S.MESH.itemsize
                    meshes[i]["numflexes"] = len(mesh.flexes)
                    meshes[i]["flexindex"] = _write_flexes(blob, mesh.flexes) - mesh_off
                offset += len(mesh.vertices)
            if model.eyeballs:
                rec["numeyeballs"] = len(model.eyeballs)
                rec["eyeballindex"] = _write_eyeballs(blob, model.eyeballs) - m_off
            first_vertex += count
            if model.meshes:
                blob.put(meshes_off, meshes.tobytes())
        blob.put(models_off, models.tobytes())
    blob.put(int(h["bodypartindex"]), body_parts.tobytes())
    for i, b in enumerate(spec.bones):
        bones[i]["sznameindex"] = blob.string(b.name) - (int(h["boneindex"]) + i * layout.bone.itemsize)
    blob.put(int(h["boneindex"]), bones.tobytes())
    textures = _records(layout.texture, len(spec.textures))
    h["numtextures"], h["textureindex"] = len(spec.textures), blob.add(bytes(textures.nbytes))
    for i, t in enumerate(spec.textures):
        textures[i]["sznameindex"] = blob.string(t) - (int(h["textureindex"]) + i * layout.texture.itemsize)
    blob.put(int(h["textureindex"]), textures.tobytes())
    cd = [blob.string(c) for c in spec.cd_materials]
    h["numcdtextures"], h["cdtextureindex"] = len(cd), blob.add(struct.pack(f"<{len(cd)}i", *cd))
    skins = np.array(spec.skins, dtype="<i2")
    h["numskinfamilies"], h["numskinref"] = skins.shape
    h["skinindex"] = blob.add(skins.tobytes())
    atts = _records(S.ATTACHMENT, len(spec.attachments))
    h["numlocalattachments"], h["localattachmentindex"] = len(atts), blob.add(bytes(atts.nbytes))
    for i, a in enumerate(spec.attachments):
        atts[i]["localbone"], atts[i]["local"] = a.bone, a.matrix
        atts[i]["sznameindex"] = blob.string(a.name) - (int(h["localattachmentindex"]) + i * S.ATTACHMENT.itemsize)
    blob.put(int(h["localattachmentindex"]), atts.tobytes())
    groups = _records(S.MODELGROUP, len(spec.includes))
    h["numincludemodels"], h["includemodelindex"] = len(groups), blob.add(bytes(groups.nbytes))
    for i, name in enumerate(spec.includes):
        groups[i]["sznameindex"] = blob.string(name) - (int(h["includemodelindex"]) + i * S.MODELGROUP.itemsize)
    blob.put(int(h["includemodelindex"]), groups.tobytes())
    _write_animations(spec, blob, h, layout.animdesc)
    if spec.flex_names:
        descs = np.zeros(len(spec.flex_names), S.FLEXDESC)
        h["numflexdesc"], h["flexdescindex"] = len(descs), blob.add(bytes(descs.nbytes))
        for i, name in enumerate(spec.flex_names):
            descs[i]["szfacsindex"] = blob.string(name) - (int(h["flexdescindex"]) + i * S.FLEXDESC.itemsize)
        blob.put(int(h["flexdescindex"]), descs.tobytes())
    if spec.version == 53:
        h["sznameindex"] = blob.string(spec.name)  # absolute
        embedded = {"vtx": write_vtx(spec), "vvd": write_vvd(spec), "phy": spec.embedded_phy}
        embedded["vvc"] = write_vvc(spec) if spec.vertex_colors else b""
        for kind in S.EMBEDDED_53:
            if embedded[kind]:
                h[f"{kind}index"], h[f"{kind}size"] = blob.add(embedded[kind], 16), len(embedded[kind])
    h["length"] = len(blob.buf) + (-len(blob.buf) % 4)
    blob.add(b"", 4)
    blob.put(0, header.tobytes())
    return bytes(blob.buf)


S_STATIC = 0x10


def _write_flexes(blob: Blob, flexes: list[SFlex]) -> int:
    """A mesh's flex records, each followed by its vertex animations (offsets from the record)."""
    records = _records(S.FLEX, len(flexes))
    at = blob.add(bytes(records.nbytes))
    for k, flex in enumerate(flexes):
        anims = _records(S.VERTANIM, len(flex.indices))
        anims["index"] = flex.indices
        anims["delta"] = np.asarray(flex.deltas, "<f2").reshape(-1, 3).view("<u2")
        r = records[k]
        r["flexdesc"], r["target"], r["flexpair"], r["numverts"] = flex.desc, flex.targets, flex.pair, len(anims)
        r["vertindex"] = blob.add(anims.tobytes()) - (at + k * S.FLEX.itemsize)
    blob.put(at, records.tobytes())
    return at


def _write_eyeballs(blob: Blob, eyes: list[SEyeball]) -> int:
    records = _records(S.EYEBALL, len(eyes))
    at = blob.add(bytes(records.nbytes))
    for k, eye in enumerate(eyes):
        r = records[k]
        r["bone"], r["org"], r["radius"], r["texture"], r["iris_scale"] = (
            eye.bone, eye.org, eye.radius, eye.texture, eye.iris_scale
        )  # fmt: skip
        r["upperlidflexdesc"], r["upperflexdesc"], r["uppertarget"] = eye.upper_lid, eye.upper, eye.upper_targets
        r["lowerlidflexdesc"], r["lowerflexdesc"], r["lowertarget"] = eye.lower_lid, eye.lower, eye.lower_targets
        r["sznameindex"] = blob.string(eye.name) - (at + k * S.EYEBALL.itemsize)
    blob.put(at, records.tobytes())
    return at


def write_vvd(spec: SourceSpec) -> bytes:
    pool = pool_of(spec)
    verts = _records(S.VVD_VERTEX, len(pool))
    for i, v in enumerate(pool):
        n = len(v.bones)
        verts[i]["weights"][:n], verts[i]["bones"][:n], verts[i]["numbones"] = v.weights, v.bones, n
        verts[i]["pos"], verts[i]["normal"], verts[i]["uv"] = v.pos, v.normal, v.uv
    tangents = np.tile(np.array([1, 0, 0, 1], "<f4"), (len(pool), 1))
    fixups = np.zeros(0, dtype=S.VVD_FIXUP)
    if spec.shuffle_with_fixups and len(pool) >= 2:
        half = len(pool) // 2  # disk order: second half first; the fixups put the first half back in front
        order = _disk_order(len(pool), spec)
        verts, tangents = verts[order], tangents[order]
        fixups = np.array([(0, len(pool) - half, half), (0, 0, len(pool) - half)], dtype=S.VVD_FIXUP)
    header = _records(S.VVD_HEADER, 1)
    h = header[0]
    h["id"], h["version"], h["numlods"] = S.VVD_MAGIC, 4, 1
    h["checksum"] = spec.checksum if spec.vvd_checksum is None else spec.vvd_checksum
    h["numlodvertexes"][0] = len(pool)
    h["numfixups"], h["fixuptablestart"] = len(fixups), S.VVD_HEADER.itemsize
    h["vertexdatastart"] = S.VVD_HEADER.itemsize + fixups.nbytes
    h["tangentdatastart"] = int(h["vertexdatastart"]) + verts.nbytes
    return header.tobytes() + fixups.tobytes() + verts.tobytes() + tangents.tobytes()


def vertex_colors_of(spec: SourceSpec) -> np.ndarray:
    """The RGBA8 colour written for each pool vertex (in mesh order): its index spread over the channels."""
    index = np.arange(len(pool_of(spec)))
    return np.stack([index % 256, (index * 7) % 256, (index * 13) % 256, np.full_like(index, 255)], 1).astype("u1")


def second_uvs_of(spec: SourceSpec) -> np.ndarray:
    """The second UV pair written for each pool vertex (in mesh order), as stored (V down)."""
    index = np.arange(len(pool_of(spec)), dtype="<f4")
    return np.stack([index / 64.0, 1.0 - index / 128.0], 1).astype("<f4")


def _disk_order(count: int, spec: SourceSpec) -> np.ndarray:
    """The .vvd's disk order of the pool (see ``shuffle_with_fixups``); a .vvc follows it."""
    if spec.shuffle_with_fixups and count >= 2:
        half = count // 2
        return np.r_[np.arange(half, count), np.arange(half)]
    return np.arange(count)


def write_vvc(spec: SourceSpec) -> bytes:
    order = _disk_order(len(pool_of(spec)), spec)
    colors, uv2 = vertex_colors_of(spec)[order], second_uvs_of(spec)[order]
    header = _records(S.VVC_HEADER, 1)
    h = header[0]
    h["id"], h["version"], h["checksum"], h["numlods"] = S.VVC_MAGIC, 1, spec.checksum, 1
    h["numlodvertexes"][0] = len(colors)
    h["colordatastart"] = S.VVC_HEADER.itemsize
    h["uv2datastart"] = S.VVC_HEADER.itemsize + colors.nbytes
    return header.tobytes() + colors.tobytes() + uv2.tobytes()


def write_vtx(spec: SourceSpec) -> bytes:
    size = spec.strip_header
    sg_dtype, strip_dtype = S.VTX_STRIPGROUP[size], S.VTX_STRIP[size]
    blob = Blob(S.VTX_HEADER.itemsize)
    header = _records(S.VTX_HEADER, 1)
    h = header[0]
    h["version"], h["numlods"], h["numbodyparts"] = S.VTX_VERSION, spec.vtx_lods, len(spec.body_parts)
    h["checksum"] = spec.checksum if spec.vtx_checksum is None else spec.vtx_checksum
    bps = _records(S.VTX_BODYPART, len(spec.body_parts))
    h["bodypartoffset"] = blob.add(bytes(bps.nbytes), 1)
    for b, bp in enumerate(spec.body_parts):
        bp_off = int(h["bodypartoffset"]) + b * 8
        models = _records(S.VTX_MODEL, len(bp.models))
        m_base = blob.add(bytes(models.nbytes), 1)
        bps[b]["nummodels"], bps[b]["modeloffset"] = len(bp.models), m_base - bp_off
        for m, model in enumerate(bp.models):
            lods = _records(S.VTX_LOD, spec.vtx_lods)
            l_base = blob.add(bytes(lods.nbytes), 1)
            models[m]["numlods"], models[m]["lodoffset"] = spec.vtx_lods, l_base - (m_base + m * 8)
            for k in range(spec.vtx_lods):
                meshes = _records(S.VTX_MESH, len(model.meshes))
                me_base = blob.add(bytes(meshes.nbytes), 1) if model.meshes else l_base
                lods[k]["nummeshes"], lods[k]["meshoffset"] = len(model.meshes), me_base - (l_base + k * 12)
                lods[k]["switchpoint"] = float(k * 10)
                for i, mesh in enumerate(model.meshes):
                    chunks = np.array_split(np.array(mesh.triangles, dtype=np.int64).reshape(-1, 3), mesh.strip_groups)
                    groups = _records(sg_dtype, len(chunks))
                    sg_base = blob.add(bytes(groups.nbytes), 1)
                    meshes[i]["numstripgroups"] = len(chunks)
                    meshes[i]["stripgroupheaderoffset"] = sg_base - (me_base + i * 9)
                    strips = _records(strip_dtype, len(chunks))
                    strip_base = blob.add(bytes(strips.nbytes), 1)  # studiomdl's order: groups, strips, data
                    for g, tris in enumerate(chunks):
                        g_off = sg_base + g * size
                        used, local = np.unique(tris[:, ::-1], return_inverse=True)  # clockwise on disk
                        vtx_verts = _records(S.VTX_VERTEX, len(used))
                        vtx_verts["numbones"], vtx_verts["origmeshvertid"] = 1, used
                        v_off = blob.add(vtx_verts.tobytes(), 1)
                        i_off = blob.add(local.astype("<u2").tobytes(), 1)
                        strips[g]["numindices"], strips[g]["numverts"] = local.size, len(used)
                        strips[g]["numbones"], strips[g]["flags"] = 1, S.STRIP_IS_TRILIST
                        groups[g]["numverts"], groups[g]["vertoffset"] = len(used), v_off - g_off
                        groups[g]["numindices"], groups[g]["indexoffset"] = local.size, i_off - g_off
                        groups[g]["numstrips"], groups[g]["stripoffset"] = (
                            1,
                            strip_base + g * strip_dtype.itemsize - g_off,
                        )
                    blob.put(sg_base, groups.tobytes())
                    blob.put(strip_base, strips.tobytes())
                if model.meshes:
                    blob.put(me_base, meshes.tobytes())
            blob.put(l_base, lods.tobytes())
        blob.put(m_base, models.tobytes())
    blob.put(int(h["bodypartoffset"]), bps.tobytes())
    blob.put(0, header.tobytes())
    return bytes(blob.buf)


def write_source(spec: SourceSpec, folder: Path, stem: str = "model", vtx_suffix: str = ".dx90.vtx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.mdl").write_bytes(write_mdl(spec))
    if spec.version != 53:  # v53 carries them inside the .mdl
        (folder / f"{stem}.vvd").write_bytes(write_vvd(spec))
        (folder / f"{stem}{vtx_suffix}").write_bytes(write_vtx(spec))
        if spec.vertex_colors:
            (folder / f"{stem}.vvc").write_bytes(write_vvc(spec))
    if any(a.in_ani for a in spec.animations):
        (folder / f"{stem}.ani").write_bytes(write_ani(spec))
    return folder / f"{stem}.mdl"


# --- ready-made shapes -----------------------------------------------------------------------------------------


def quad_mesh(material: int = 0, z: float = 0.0, bone: int = 0, strip_groups: int = 1) -> SMesh:
    verts = [SVertex((x, y, z), (0, 0, 1), (x, y), (bone,), (1.0,)) for x, y in ((0, 0), (1, 0), (1, 1), (0, 1))]
    return SMesh(material, verts, [(0, 1, 2), (0, 2, 3)], strip_groups)


def character_spec(**overrides: object) -> SourceSpec:
    """Two bones, a body, a head with two options (one blank), two skin families over two textures."""
    spec = SourceSpec(
        body_parts=[
            SBodyPart("body", [SModel("body_ref.smd", [quad_mesh(0, 0.0, 0), quad_mesh(1, 1.0, 1)])]),
            SBodyPart("hat", [SModel(""), SModel("hat_ref", [quad_mesh(1, 2.0, 1)])]),
        ],
        bones=[SBone("pelvis", -1, (0, 0, 1)), SBone("spine", 0, (0, 0, 1), (0.0, 0.0, 0.7071068, 0.7071068))],
        textures=["body", "body_red", "hat"],
        skins=[[0, 2], [1, 2]],
        attachments=[SAttachment("eyes", 1, ((1, 0, 0, 0.5), (0, 1, 0, 0), (0, 0, 1, 0.25)))],
        includes=["models/test\\Test_Animations.mdl"],
    )
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def _quat_to_euler(q: tuple[float, float, float, float]) -> tuple[float, float, float]:
    """Source ``QuaternionAngles`` (inverse of AngleQuaternion, X then Y then Z)."""
    x, y, z, w = q
    roll = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    pitch = np.arcsin(np.clip(2 * (w * y - z * x), -1, 1))
    yaw = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return (float(roll), float(pitch), float(yaw))


def encode_q48(q: tuple[float, float, float, float]) -> bytes:
    w, x, y, z = q
    xs, ys = round(x * 32768 + 32768), round(y * 32768 + 32768)
    zs = round(z * 16384 + 16384) & 0x7FFF
    return struct.pack("<3H", min(xs, 65535), min(ys, 65535), zs | (0x8000 if w < 0 else 0))


def encode_q64(q: tuple[float, float, float, float]) -> bytes:
    w, x, y, z = q
    parts = [round(c * 1048576.5 + 1048576) & 0x1FFFFF for c in (x, y, z)]
    bits = parts[0] | parts[1] << 21 | parts[2] << 42 | ((1 << 63) if w < 0 else 0)
    return bits.to_bytes(8, "little")


def encode_v48(v: tuple[float, float, float]) -> bytes:
    return np.array(v, dtype="<f2").tobytes()


def _node_list(nodes: list[SNode], frames: slice) -> bytes:
    """A node list for the frames in ``frames`` (RLE streams restart at the section's first frame)."""
    blobs = []
    for node in nodes:
        flags, payload, streams = 0x10 if node.delta else 0, b"", []
        for kind, raw_flag, raw2_flag, anim_flag in ((node.rot, 0x02, 0x20, 0x08), (node.pos, 0x01, 0, 0x04)):
            if kind is None:
                continue
            if kind[0] == "q48":
                flags, payload = flags | raw_flag, payload + encode_q48(kind[1])
            elif kind[0] == "q64":
                flags, payload = flags | raw2_flag, payload + encode_q64(kind[1])
            elif kind[0] == "v48":
                flags, payload = flags | raw_flag, payload + encode_v48(kind[1])
            else:
                flags |= anim_flag
                streams.append((len(payload), [encode_rle(list(axis[frames])) for axis in kind[1]]))
                payload += b"\0" * 6
        payload = bytearray(payload)
        for where, axes in streams:  # value pointers: 3 offsets relative to the pointer itself
            offsets = []
            for data in axes:
                offsets.append(len(payload) - where)
                payload += data
            struct.pack_into("<3h", payload, where, *offsets)
        blobs.append((node.bone, flags, bytes(payload)))
    if not blobs:
        return struct.pack("<BBh", 255, 0, 0)  # an empty list is just the terminator node
    out = bytearray()
    for i, (bone, flags, payload) in enumerate(blobs):
        size = 4 + len(payload) + (-len(payload) % 2)
        out += (
            struct.pack("<BBh", bone, flags, size if i < len(blobs) - 1 else 0) + payload + b"\0" * (-len(payload) % 2)
        )
    return bytes(out)


def _write_animations(spec: SourceSpec, blob: Blob, h: np.ndarray, animdesc: np.dtype = S.ANIMDESC) -> None:
    descs = _records(animdesc, len(spec.animations))
    h["numlocalanim"], h["localanimindex"] = len(descs), blob.add(bytes(descs.nbytes))
    for i, anim in enumerate(spec.animations):
        off = int(h["localanimindex"]) + i * animdesc.itemsize
        d = descs[i]
        d["fps"], d["numframes"], d["flags"] = anim.fps, anim.frames, 0x04 if anim.delta else 0
        d["sznameindex"] = blob.string(anim.name) - off
        if spec.version == 53:
            _write_animation53(spec, anim, d, blob, off)
            continue
        if anim.frame_bones is not None or anim.in_ani:
            _write_frame_animation(spec, i, d, blob, off)
            continue
        if anim.section_frames:
            sf = anim.section_frames
            d["sectionframes"] = sf
            count = anim.frames // sf + 2
            sections = _records(S.ANIM_SECTION, count)
            d["sectionindex"] = blob.add(bytes(sections.nbytes)) - off
            for section in range(count):
                if section == anim.frames // sf + 1:
                    frames = slice(anim.frames - 1, anim.frames)  # the last frame, alone
                else:
                    frames = slice(section * sf, min((section + 1) * sf, anim.frames))
                if frames.start >= frames.stop:
                    continue
                sections[section]["animindex"] = blob.add(_node_list(anim.nodes, frames)) - off
            blob.put(off + int(d["sectionindex"]), sections.tobytes())
        else:
            d["animindex"] = blob.add(_node_list(anim.nodes, slice(0, anim.frames))) - off
    blob.put(int(h["localanimindex"]), descs.tobytes())
    _write_ani_blocks(spec, blob, h)


# --- Titanfall 2 (v53) animations: 32-byte bone headers with scale channels ----------------------------------------

V53_DELTA, V53_RAWPOS, V53_RAWROT, V53_RAWSCALE, V53_NOROT = 0x01, 0x02, 0x04, 0x08, 0x10
V53_HEADER = 32  # posscale, bone, flags, 2 unused, rotation 8, position 6, scale 6, nextoffset


def _node_list53(nodes: list[SNode], frames: slice, posscale: float) -> bytes:
    """Bone headers for the frames in ``frames``, each followed by its streams (offsets relative to the channel's
    own field), chained by ``nextoffset`` and ended by a header of bone 255 (as in Titanfall 2's files)."""
    out = bytearray()
    for node in nodes:
        head, tail = bytearray(V53_HEADER), bytearray()
        flags = V53_DELTA if node.delta else 0
        channels = ((node.rot, 8, V53_RAWROT), (node.pos, 16, V53_RAWPOS), (node.scale, 22, V53_RAWSCALE))
        for kind, at, raw_flag in channels:
            if kind is None:
                flags |= V53_NOROT if at == 8 else 0
            elif kind[0] in ("q64", "v48") and (kind[0] == "q64") == (at == 8):
                value = encode_q64(kind[1]) if at == 8 else encode_v48(kind[1])
                head[at : at + len(value)], flags = value, flags | raw_flag
            elif kind[0] == "rle":
                offsets = []
                for axis in kind[1]:
                    offsets.append(0 if axis is None else V53_HEADER + len(tail) - at)
                    tail += b"" if axis is None else encode_rle(list(axis[frames]))
                struct.pack_into("<3h", head, at, *offsets)
            else:
                raise ValueError(f"v53 has no {kind[0]} channel at byte {at} of a bone header")
        tail += b"\0" * (-len(tail) % 4)
        own = node.posscale if node.posscale is not None else posscale
        struct.pack_into("<fBB", head, 0, own, node.bone, flags)
        struct.pack_into("<i", head, 28, V53_HEADER + len(tail))
        out += head + tail
    return bytes(out + struct.pack("<4xB27x", 255))  # the end: bone 255, nextoffset 0


def _write_animation53(spec: SourceSpec, anim: SAnimation, d: np.void, blob: Blob, off: int) -> None:
    """Data in the .mdl (v53 has no .ani); sections are one int32 each, the last frame alone in the last one."""
    if anim.frame_bones is not None or anim.in_ani:
        raise ValueError("v53 has neither frame-major animations nor .ani files")

    def place(frames: slice) -> int:
        return blob.add(_node_list53(anim.nodes, frames, spec.posscale)) - off

    if not anim.section_frames:
        d["animindex"] = place(slice(0, anim.frames))
        return
    sf = d["sectionframes"] = anim.section_frames
    table = np.zeros((anim.frames - 1) // sf + 2, dtype="<i4")
    d["sectionindex"] = blob.add(bytes(table.nbytes)) - off
    for section in range(len(table)):
        last = section == len(table) - 1
        frames = (
            slice(anim.frames - 1, anim.frames) if last else slice(section * sf, min((section + 1) * sf, anim.frames))
        )
        if frames.start < frames.stop:
            table[section] = place(frames)
    blob.put(off + int(d["sectionindex"]), table.tobytes())


# --- frame-major (v49 STUDIO_FRAMEANIM) animations and the .ani file ------------------------------------------------


@dataclass
class SFrameBone:
    """One bone's channels in a frame-major animation, each ``(kind, value)`` or None (the bind pose).
    ``rot`` kinds: "anim" (Quaternion48 per frame; value: one (w, x, y, z) per frame of the animation), "anim2"
    (Quaternion48S per frame), "const" (one Quaternion48), "const2" (one Quaternion48S). ``pos`` kinds: "anim"
    (Vector48 per frame), "full" (3 floats per frame), "const" (one Vector48), "const2" (3 floats). In a section of
    one frame, per-frame kinds become constants, as studiomdl writes them. ``extra``: flag bits stored without
    data, outranked by the kinds above (the engine reads the first source its flags name)."""

    rot: tuple | None = None
    pos: tuple | None = None
    extra: int = 0


ANI_FIRST_BLOCK = 416  # block 0 is a dummy; real .ani files start their first block after a 416-byte header
FRAME_KINDS = {  # (channel, kind) → (flag, stored per frame?, encoder)
    ("rot", "anim"): (0x08, True, lambda q: encode_q48(q)),
    ("rot", "anim2"): (0x80, True, lambda q: encode_q48s(q)),
    ("rot", "const"): (0x02, False, lambda q: encode_q48(q)),
    ("rot", "const2"): (0x40, False, lambda q: encode_q48s(q)),
    ("pos", "anim"): (0x04, True, lambda v: encode_v48(v)),
    ("pos", "full"): (0x10, True, lambda v: struct.pack("<3f", *v)),
    ("pos", "const"): (0x01, False, lambda v: encode_v48(v)),
    ("pos", "const2"): (0x20, False, lambda v: struct.pack("<3f", *v)),
}
ONE_FRAME = {"anim": "const", "anim2": "const2", "full": "const2"}


def encode_q48s(q: tuple[float, float, float, float]) -> bytes:
    """Quaternion48S: the largest component is dropped (recreated from the norm; its sign in the top bit of the
    third word); the three after it, cyclically in x, y, z, w order, are kept in 15 bits each, and the index of
    the first of them in the top bits of the first two words."""
    w, x, y, z = q
    xyzw = (x, y, z, w)
    largest = max(range(4), key=lambda i: abs(xyzw[i]))
    first = (largest + 1) % 4
    parts = [min(max(round(xyzw[(first + k) % 4] * 23168.0) + 16384, 0), 0x7FFF) for k in range(3)]
    words = [parts[0] | (first >> 1) << 15, parts[1] | (first & 1) << 15, parts[2] | (xyzw[largest] < 0) << 15]
    return struct.pack("<3H", *words)


def _frame_section(anim: SAnimation, frames: slice, bone_count: int) -> bytes:
    """``mstudio_frame_anim_t``, the per-bone flags, the constants, then the frames; a section that is not the
    animation's last also stores the next section's first frame (the engine blends towards it)."""
    rows = list(range(frames.start, min(frames.stop + 1, anim.frames)))
    flags, constants, per_frame = bytearray(bone_count), b"", [b""] * len(rows)
    for bone, channels in sorted(anim.frame_bones.items()):
        flags[bone] |= channels.extra
        for channel in ("rot", "pos"):
            item = getattr(channels, channel)
            if item is None:
                continue
            kind, value = item
            if len(rows) == 1 and kind in ONE_FRAME:
                kind, value = ONE_FRAME[kind], value[rows[0]]
            flag, framed, encode = FRAME_KINDS[channel, kind]
            flags[bone] |= flag
            if framed:
                per_frame = [data + encode(value[f]) for data, f in zip(per_frame, rows, strict=True)]
            else:
                constants += encode(value)
    constants_at = 24 + bone_count + (-(24 + bone_count) % 4)
    frames_at = constants_at + len(constants) + (-len(constants) % 4)
    head = struct.pack("<6i", constants_at, frames_at, len(per_frame[0]), 0, 0, 0) + bytes(flags)
    return head.ljust(constants_at, b"\0") + constants.ljust(frames_at - constants_at, b"\0") + b"".join(per_frame)


def _section_slices(anim: SAnimation) -> list[tuple[int, slice]]:
    """(section, frames) of every stored section; section -1: the animation is not sectioned."""
    if not anim.section_frames:
        return [(-1, slice(0, anim.frames))]
    sf, out = anim.section_frames, []
    for section in range(anim.frames // sf + 2):
        if section == anim.frames // sf + 1:
            frames = slice(anim.frames - 1, anim.frames)  # the last frame, alone
        else:
            frames = slice(section * sf, min((section + 1) * sf, anim.frames))
        if frames.start < frames.stop:
            out.append((section, frames))
    return out


def _section_data(spec: SourceSpec, anim: SAnimation, frames: slice) -> bytes:
    if anim.frame_bones is not None:
        return _frame_section(anim, frames, len(spec.bones))
    return _node_list(anim.nodes, frames)


def _ani_layout(spec: SourceSpec) -> tuple[bytes, dict[tuple[int, int], int]]:
    """The .ani file and, per (animation, section), its data's offset in block 1."""
    ani, where = Blob(ANI_FIRST_BLOCK), {}
    ani.put(0, b"IDAG" + struct.pack("<i", spec.version))
    for i, anim in enumerate(spec.animations):
        if anim.in_ani:
            for section, frames in _section_slices(anim):
                where[i, section] = ani.add(_section_data(spec, anim, frames)) - ANI_FIRST_BLOCK
    ani.add(b"", 4)
    return bytes(ani.buf), where


def write_ani(spec: SourceSpec) -> bytes:
    """The .ani file holding the animations marked ``in_ani`` (what ``write_mdl`` points them at)."""
    return _ani_layout(spec)[0]


def _write_frame_animation(spec: SourceSpec, index: int, d: np.void, blob: Blob, off: int) -> None:
    """A frame-major animation, or any animation kept in the .ani: data in the .mdl or in block 1."""
    anim = spec.animations[index]
    d["flags"] |= 0x40 if anim.frame_bones is not None else 0
    where = _ani_layout(spec)[1] if anim.in_ani else {}

    def place(section: int, frames: slice) -> tuple[int, int]:
        if anim.in_ani:
            return 1, where[index, section]
        return 0, blob.add(_section_data(spec, anim, frames)) - off

    if not anim.section_frames:
        d["animblock"], d["animindex"] = place(-1, slice(0, anim.frames))
        return
    d["sectionframes"] = anim.section_frames
    sections = _records(S.ANIM_SECTION, anim.frames // anim.section_frames + 2)
    d["sectionindex"] = blob.add(bytes(sections.nbytes)) - off
    for section, frames in _section_slices(anim):
        sections[section]["animblock"], sections[section]["animindex"] = place(section, frames)
    blob.put(off + int(d["sectionindex"]), sections.tobytes())


def _write_ani_blocks(spec: SourceSpec, blob: Blob, h: np.void) -> None:
    """The header's animation blocks (a dummy block 0, then the whole .ani data as block 1) and file name."""
    if not any(a.in_ani for a in spec.animations):
        return
    blocks = np.array([[0, 0], [ANI_FIRST_BLOCK, len(write_ani(spec))]], dtype="<i4")
    h["numanimblocks"], h["animblockindex"] = 2, blob.add(blocks.tobytes())
    h["szanimblocknameindex"] = blob.string(spec.name.rsplit(".", 1)[0] + ".ani")
