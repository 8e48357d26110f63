"""Read a Source ``.mdl`` (versions 44–49, Respawn's 52 and 53; Bloodlines' 2531 in ``mdl2531``). Foreign files
get a refusal that says what they are.

Offsets in the MDL are relative to the struct that holds them (notes §1.1); every one is checked against the
file size before it is followed, and every count against the bytes its records would need. The version picks
the record layouts (``structs.LAYOUTS``); v53 records are converted to the 44–49 layouts, so everything after
this reader assembles every version alike. What v53 holds beyond them (the embedded sidecars) is read from its
header, never guessed.
"""

from __future__ import annotations

import os

import numpy as np

from ...access import read_file
from ...budget import current_budget
from ..binary import Cursor
from . import faces
from . import structs as S
from . import structs2531 as S2531
from .animation_values import half_to_float
from .attachments import read_attachments
from .mdl2531 import read_mdl2531_bytes
from .model import (
    MdlAnimation,
    MdlBodyPart,
    MdlEvent,
    MdlFile,
    MdlFlex,
    MdlHitbox,
    MdlMesh,
    MdlModel,
    MdlSequence,
)
from .records import as_layout as _as_layout
from .records import records as _records
from .records import records_at as _records_at
from .records import rel as _rel

# Refusals for files that share the extension (notes §6.18, §6.20).
FOREIGN = {
    b"IDSQ": "a GoldSrc (Half-Life 1) sequence group file",
    b"IDSV": "a Source vertex file (.vvd), not a model",
    b"IDAG": "a Source animation block file (.ani), not a model",
    b"DST0": "a model mangled by GMAD packing (magic DST0)",
    b"DST1": "a model mangled by GMAD packing (magic DST1)",
}


def read_mdl(path: str | os.PathLike[str]) -> MdlFile:
    return read_mdl_bytes(read_file(path), os.fspath(path))


VERSIONS_TEXT = "44–49, 52, 53 and 2531 (Bloodlines)"


def read_mdl_bytes(data: bytes, path: str | None = None) -> MdlFile:
    cur = Cursor(data, path)
    if _identify(cur) == S2531.VERSION:  # told apart by the version field; its own layout throughout
        return read_mdl2531_bytes(data, path)
    header, raw = _header(cur)
    version = int(header["version"])
    layout = S.LAYOUTS[version]
    name = _name(cur, header, raw)
    bones = _as_layout(_records(cur, header, "numbones", "boneindex", layout.bone, "bones"), S.BONE)
    bone_base, bone_size = int(header["boneindex"]), layout.bone.itemsize
    bone_names = [
        cur.string_at(_rel(cur, bone_base + i * bone_size, offset), f"name of bone {i}")
        for i, offset in enumerate(bones["sznameindex"].tolist())
    ]
    parents = bones["parent"]
    if len(bones) and ((parents >= np.arange(len(bones))) | (parents < -1)).any():
        bad = int(np.nonzero((parents >= np.arange(len(bones))) | (parents < -1))[0][0])
        raise cur.error(
            f"bone {bad} ('{bone_names[bad]}') has parent {int(parents[bad])}; parents must come first",
            int(header["boneindex"]) + bad * layout.bone.itemsize + 4,
        )
    mdl = MdlFile(
        path=path,
        version=version,
        checksum=int(header["checksum"]),
        name=name,
        flags=int(header["flags"]),
        bones=bones,
        bone_names=bone_names,
        body_parts=_body_parts(cur, header),
        textures=_textures(cur, header, layout.texture),
        cd_materials=_cd_materials(cur, header),
        skins=_skins(cur, header),
        attachments=read_attachments(cur, header, len(bones), S.ATTACHMENT),
        hitbox_sets=_hitbox_sets(cur, header),
        include_models=_includes(cur, header),
        animations=_animations(cur, header, layout.animdesc),
        sequences=_sequences(cur, header, layout.seqdesc_size),
        flex_names=faces.flex_names(cur, header),
        anim_block_name=cur.string_at(int(header["szanimblocknameindex"]), "animation block file name"),
        num_anim_blocks=int(header["numanimblocks"]),
        anim_blocks=_records(cur, header, "numanimblocks", "animblockindex", np.dtype(("<i4", 2)), "animation blocks")
        if int(header["numanimblocks"]) > 0
        else np.zeros((0, 2), dtype=np.int32),
        data=bytes(data),
        flex_controllers=faces.flex_controllers(cur, header),
        flex_rules=faces.flex_rules(cur, header),
        embedded=_embedded(cur, raw) if version == 53 else {},
    )
    if int(header["length"]) != cur.size:
        mdl.warnings.add(f"the header says the file is {int(header['length'])} bytes but it is {cur.size}")
    return mdl


def _identify(cur: Cursor) -> int:
    """The version of a Source model; anything else is refused with what it is."""
    if cur.size < 8:
        raise cur.error(f"not a Source model: {cur.size} bytes is too short for a header", 0)
    magic = bytes(cur.data[:4])
    version = int(np.frombuffer(cur.data, "<i4", 1, 4)[0])
    if magic in FOREIGN:
        raise cur.error(
            f"this is {FOREIGN[magic]}; only Source models (IDST, versions {VERSIONS_TEXT}) can be imported", 0
        )
    if magic != S.MDL_MAGIC:
        raise cur.error(f"not a Source model: expected the identifier 'IDST', found {magic!r}", 0)
    if version == 10:
        raise cur.error(
            f"this is a GoldSrc (Half-Life 1) model, version 10; only Source models ({VERSIONS_TEXT}) are supported", 4
        )
    if version not in S.SUPPORTED_MDL_VERSIONS and version != S2531.VERSION:
        raise cur.error(f"MDL version {version} is not supported; this importer reads {VERSIONS_TEXT}", 4)
    return version


def _header(cur: Cursor) -> tuple[np.void, np.void]:
    """The header in the 44–49 layout (fields v53 lacks are zero), and as the file's version lays it out."""
    version = _identify(cur)
    layout = S.LAYOUTS[version]
    raw = cur.array_at(layout.header, 0, 1, f"version {version} studiohdr_t header")
    return _as_layout(raw, S.STUDIOHDR)[0], raw[0]


def _name(cur: Cursor, header: np.void, raw_header: np.void) -> str:
    raw = header["name"].tobytes()
    name = raw.split(b"\0", 1)[0].decode("latin-1")
    if "sznameindex" in raw_header.dtype.names:  # v53: the full name at an absolute offset
        return cur.string_at(int(raw_header["sznameindex"]), "long model name", optional=True) or name
    index = int(header["studiohdr2index"])
    if index:
        (hdr2,) = cur.array_at(S.STUDIOHDR2, index, 1, "studiohdr2_t")
        if int(hdr2["sznameindex"]):
            name = cur.string_at(index + int(hdr2["sznameindex"]), "long model name") or name
    return name


def _body_parts(cur: Cursor, header: np.ndarray) -> list[MdlBodyPart]:
    parts = []
    for b, (bp_off, bp) in enumerate(
        _records_at(cur, header, "numbodyparts", "bodypartindex", S.BODYPART, "body parts")
    ):
        name = cur.string_at(_rel(cur, bp_off, bp["sznameindex"]), f"name of body part {b}")
        models = []
        for m, (m_off, rec) in enumerate(
            _records_at(cur, bp, "nummodels", "modelindex", S.MODEL, f"models of body part '{name}'", bp_off)
        ):
            meshes = [
                MdlMesh(
                    int(r["material"]),
                    int(r["numvertices"]),
                    int(r["vertexoffset"]),
                    int(r["materialtype"]),
                    int(r["materialparam"]),
                    int(r["numflexes"]),
                    r["numlodvertexes"].copy(),
                    _flexes(cur, me_off, r),
                )
                for me_off, r in _records_at(
                    cur, rec, "nummeshes", "meshindex", S.MESH, f"meshes of model {m} in '{name}'", m_off
                )
            ]
            if int(rec["vertexindex"]) % S.VERTEX_SIZE:
                raise cur.error(
                    f"model {m} of '{name}': vertex index {int(rec['vertexindex'])} is not a multiple of 48", m_off + 84
                )
            models.append(
                MdlModel(
                    rec["name"].tobytes().split(b"\0", 1)[0].decode("latin-1"),
                    int(rec["numvertices"]),
                    int(rec["vertexindex"]) // S.VERTEX_SIZE,
                    meshes,
                    int(rec["numeyeballs"]),
                    faces.eyeballs(cur, m_off, rec),
                )
            )
        parts.append(MdlBodyPart(name, max(int(bp["base"]), 1), models))
    return parts


def _flexes(cur: Cursor, mesh_off: int, mesh: np.ndarray) -> list[MdlFlex]:
    """A mesh's flexes: fp16 deltas per vertex (notes §1.8), 16- or 18-byte records by ``vertanimtype``."""
    out = []
    for off, flex in _records_at(cur, mesh, "numflexes", "flexindex", S.FLEX, "flexes", mesh_off):
        dtype = S.VERTANIM_WRINKLE if int(flex["vertanimtype"]) == 1 else S.VERTANIM
        verts = _records(cur, flex, "numverts", "vertindex", dtype, "flex vertices", off)
        if len(verts) and int(verts["index"].max()) >= int(mesh["numvertices"]):
            raise cur.error(
                f"a flex moves vertex {int(verts['index'].max())} of a {int(mesh['numvertices'])}-vertex mesh", off
            )
        out.append(
            MdlFlex(
                int(flex["flexdesc"]),
                int(flex["flexpair"]),
                verts["index"].astype(np.int64),
                half_to_float(verts["delta"]).astype(np.float32).reshape(-1, 3),
                (verts["side"].astype(np.float32) / 255.0),
                flex["target"].astype(np.float32),
            )
        )
    return out


def _textures(cur: Cursor, header: np.ndarray, dtype: np.dtype) -> list[str]:
    return [
        cur.string_at(_rel(cur, off, t["sznameindex"]), "texture name")
        for off, t in _records_at(cur, header, "numtextures", "textureindex", dtype, "textures")
    ]


def _cd_materials(cur: Cursor, header: np.ndarray) -> list[str]:
    offsets = _records(cur, header, "numcdtextures", "cdtextureindex", np.dtype("<i4"), "material folders")
    return [cur.string_at(int(o), "material folder") for o in offsets]  # these offsets are file-relative


MAX_SKIN_FAMILIES = 32


def _skins(cur: Cursor, header: np.ndarray) -> np.ndarray:
    families, refs = int(header["numskinfamilies"]), int(header["numskinref"])
    if families <= 0 or refs <= 0:
        # Animation-only models say one family of no columns. Zero-byte rows escape the size check, so a corrupt
        # count is capped at studiomdl's MAXSTUDIOSKINS: empty rows carry nothing, but millions cost memory.
        return np.zeros((min(max(families, 0), MAX_SKIN_FAMILIES), max(refs, 0)), dtype=np.int16)
    budget = current_budget()
    budget.check(cur.path, "skin table entries (families × references)", families * refs, budget.skin_entries)
    return cur.array_at(np.dtype("<i2"), int(header["skinindex"]), families * refs, "skin table").reshape(
        families, refs
    )


def _hitbox_sets(cur: Cursor, header: np.ndarray) -> dict[str, list[MdlHitbox]]:
    out: dict[str, list[MdlHitbox]] = {}
    for i, (hs_off, hs) in enumerate(
        _records_at(cur, header, "numhitboxsets", "hitboxsetindex", S.HITBOXSET, "hitbox sets")
    ):
        name = cur.string_at(_rel(cur, hs_off, hs["sznameindex"]), "hitbox set name") or f"set{i}"
        out[name] = [
            MdlHitbox(
                int(b["bone"]),
                int(b["group"]),
                b["bbmin"].copy(),
                b["bbmax"].copy(),
                cur.string_at(_rel(cur, b_off, b["szhitboxnameindex"]), "hitbox name", optional=True),
            )
            for b_off, b in _records_at(cur, hs, "numhitboxes", "hitboxindex", S.BBOX, f"hitboxes of '{name}'", hs_off)
        ]
    return out


def _includes(cur: Cursor, header: np.ndarray) -> list[str]:
    return [
        cur.string_at(_rel(cur, off, g["sznameindex"]), "included model name")
        for off, g in _records_at(cur, header, "numincludemodels", "includemodelindex", S.MODELGROUP, "includes")
    ]


def _animations(cur: Cursor, header: np.ndarray, dtype: np.dtype = S.ANIMDESC) -> list[MdlAnimation]:
    """The descriptors in the 44–49 layout; v53's have no animation block (its data is always in the .mdl)."""
    out = []
    base = int(header["localanimindex"])
    records = _as_layout(_records(cur, header, "numlocalanim", "localanimindex", dtype, "animations"), S.ANIMDESC)
    for off, a in zip(range(base, base + len(records) * dtype.itemsize, dtype.itemsize), records, strict=True):
        out.append(
            MdlAnimation(
                cur.string_at(_rel(cur, off, a["sznameindex"]), "animation name"),
                float(a["fps"]),
                int(a["flags"]),
                int(a["numframes"]),
                int(a["animblock"]),
                int(a["sectionframes"]),
                off,
                int(a["animindex"]),
                int(a["sectionindex"]),
            )
        )
    return out


def _sequences(cur: Cursor, header: np.ndarray, size: int = S.SEQDESC_SIZE) -> list[MdlSequence]:
    count, base = int(header["numlocalseq"]), int(header["localseqindex"])
    if count <= 0:
        return []
    cur.view_at(np.dtype("u1"), base, count * size, "sequences")  # bounds check of the whole table
    out = []
    for i in range(count):
        off = base + i * size
        (seq,) = cur.view_at(S.SEQDESC_HEAD, off, 1, f"sequence {i}")  # read at once: views, not copies
        (grid,) = cur.view_at(S.SEQDESC_BLEND, off + 56, 1, f"blend grid of sequence {i}")
        cells = int(grid["groupsize"][0]) * int(grid["groupsize"][1])
        animations = []
        if 0 < cells <= 4096 and int(grid["animindexindex"]):
            animations = cur.array_at(np.dtype("<i2"), off + int(grid["animindexindex"]), cells, "blend grid").tolist()
        events = []
        if 0 < int(seq["numevents"]) <= 4096:
            event_base = off + int(seq["eventindex"])
            for k, ev in enumerate(cur.array_at(S.EVENT, event_base, int(seq["numevents"]), "events")):
                name = ev["options"].tobytes().split(b"\0", 1)[0].decode("latin-1")
                if int(ev["type"]) & 0x400 and int(ev["szeventindex"]):
                    name = (
                        cur.string_at(
                            event_base + k * S.EVENT.itemsize + int(ev["szeventindex"]), "event name", optional=True
                        )
                        or name
                    )
                events.append(MdlEvent(float(ev["cycle"]), int(ev["event"]), name))
        out.append(
            MdlSequence(
                cur.string_at(_rel(cur, off, seq["szlabelindex"]), "sequence name"),
                cur.string_at(_rel(cur, off, seq["szactivitynameindex"]), "activity name", optional=True),
                int(seq["flags"]),
                animations,
                events,
            )
        )
    return out


def _embedded(cur: Cursor, raw: np.void) -> dict[str, tuple[int, int]]:
    """v53's embedded sidecars, (offset, size) by name, each inside the file and past the header."""
    out = {}
    start = raw.dtype.itemsize
    for name in S.EMBEDDED_53:
        offset, size = int(raw[f"{name}index"]), int(raw[f"{name}size"])
        field_at = raw.dtype.fields[f"{name}index"][1]
        if size < 0:
            raise cur.error(f"the embedded .{name} data has a negative size {size}", raw.dtype.fields[f"{name}size"][1])
        if size == 0:
            continue  # absent (a model without vertex colours, or without physics)
        if offset < start or offset + size > cur.size:
            raise cur.error(
                f"the embedded .{name} data ({size:,} bytes at offset {offset:,}) must lie between the end of the "
                f"{start}-byte header and the end of the {cur.size:,}-byte file",
                field_at,
            )
        out[name] = (offset, size)
    return out


def embedded_bytes(mdl: MdlFile, name: str) -> bytes | None:
    """One of a v53 model's embedded sidecars (``"vtx"``, ``"vvd"``, ``"vvc"``, ``"phy"``), or None."""
    where = mdl.embedded.get(name)
    if where is None:
        return None
    offset, size = where
    return mdl.data[offset : offset + size]
