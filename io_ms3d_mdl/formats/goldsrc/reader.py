"""Read a GoldSrc (Half-Life 1) studio model, version 10, with its companions: the ``<name>T.mdl`` holding its
textures when the model has none, and the sequence-group files ``<name>01.mdl``… (``IDSQ``) holding the animation
data of groups 1…n−1.

Every offset is from the start of its file and checked against the file's size before it is followed; every
count against the bytes its records need. Companions are found beside the model, case-insensitively, through
the import's confinement (``access.py``): a group naming a file outside the model's folder is refused.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...access import current, listing, read_file, relative_parts
from ...budget import current_budget
from ...errors import BudgetExceeded, FormatError, Warnings
from ..binary import Cursor
from ..text import fixed_string
from . import structs as S
from .commands import mesh_corners
from .model import (
    GsAttachment,
    GsBodyPart,
    GsEvent,
    GsFile,
    GsMesh,
    GsModel,
    GsSequence,
    GsSequenceGroup,
    GsTexture,
)

QUAKE = {b"IDPO": "a Quake model (IDPO)", b"IDP2": "a Quake II model (IDP2)", b"RAPO": "a Quake model (RAPO)"}
_GROUP_FILE = re.compile(r"^(.*?)(\d\d)$")


def is_goldsrc(data: bytes) -> bool:
    """A GoldSrc model or one of its companions (``IDST`` version 10, or ``IDSQ``), by its first eight bytes."""
    return len(data) >= 8 and (data[:4] == S.SEQUENCE_GROUP_MAGIC or (data[:4] == S.MAGIC and data[4:8] == b"\n\0\0\0"))


def read_goldsrc(path: str | os.PathLike[str], companions: bool = True) -> GsFile:
    """The model at ``path``; ``companions``: also read its texture file and sequence-group files."""
    path = os.fspath(path)
    gs = read_goldsrc_bytes(read_file(path), path)
    if companions:
        attach_companions(gs, path)
    return gs


def read_goldsrc_bytes(data: bytes, path: str | None = None) -> GsFile:
    cur = Cursor(data, path)
    header = _header(cur, path)
    stem = os.path.splitext(os.path.basename(path or "model.mdl"))[0]
    textures_only = int(header["numbones"]) == 0 and int(header["numbodyparts"]) == 0 and int(header["numtextures"]) > 0
    if textures_only and stem[-1:] in "tT" and len(stem) > 1:
        raise cur.error(f"this is the texture file of a GoldSrc model; open '{stem[:-1]}.mdl' (beside it) instead", 0)
    if int(header["numbones"]) <= 0 and int(header["numbodyparts"]) <= 0:
        raise cur.error("this GoldSrc (Half-Life 1) model has no bones and no body parts: nothing to import", 140)
    bones = _records(cur, header, "numbones", "boneindex", S.BONE, "bones")
    names = [fixed_string(n) for n in bones["name"].tolist()]
    parents = bones["parent"]
    bad = np.flatnonzero((parents >= np.arange(len(bones))) | (parents < -1))
    if len(bad):
        i = int(bad[0])
        raise cur.error(
            f"bone {i} ('{names[i]}') has parent {int(parents[i])}; parents must come before their children",
            int(header["boneindex"]) + i * S.BONE.itemsize + 32,
        )
    textures, skins = _textures(cur, header)
    warnings = Warnings()  # what the reader notes; the scene adds its own
    gs = GsFile(
        path=path,
        name=fixed_string(bytes(header["name"])),
        flags=int(header["flags"]),
        eye_position=tuple(float(v) for v in header["eyeposition"]),
        bones=bones,
        bone_names=names,
        controllers=_records(
            cur, header, "numbonecontrollers", "bonecontrollerindex", S.BONE_CONTROLLER, "bone controllers"
        ),
        hitboxes=_records(cur, header, "numhitboxes", "hitboxindex", S.HITBOX, "hitboxes"),
        sequences=_sequences(cur, header),
        groups=[
            GsSequenceGroup(fixed_string(bytes(g["label"])), fixed_string(bytes(g["name"])))
            for g in _records(cur, header, "numseqgroups", "seqgroupindex", S.SEQUENCE_GROUP, "sequence groups")
        ],
        textures=textures,
        skins=skins,
        body_parts=_body_parts(cur, header, len(bones)),
        attachments=[
            GsAttachment(fixed_string(bytes(a["name"])), int(a["type"]), int(a["bone"]), a["org"].astype(np.float64))
            for a in _records(cur, header, "numattachments", "attachmentindex", S.ATTACHMENT, "attachments")
        ],
        data=data,
        warnings=warnings,
    )
    if int(header["length"]) != cur.size:
        gs.warnings.add(f"the header says the file is {int(header['length']):,} bytes but it is {cur.size:,}")
    return gs


def _header(cur: Cursor, path: str | None) -> np.void:
    if cur.size < 8:
        raise cur.error(f"not a GoldSrc model: {cur.size} bytes is too short for a header", 0)
    magic = bytes(cur.data[:4])
    if magic in QUAKE:
        raise cur.error(f"this is {QUAKE[magic]}, not a Half-Life or Source model; it cannot be imported", 0)
    if magic == S.SEQUENCE_GROUP_MAGIC:
        stem = os.path.splitext(os.path.basename(path or "model01.mdl"))[0]
        match = _GROUP_FILE.match(stem)
        model = f"'{match.group(1)}.mdl'" if match and match.group(1) else "the model it belongs to"
        raise cur.error(
            f"this is a sequence group file of a GoldSrc (Half-Life 1) model (IDSQ): it holds animations only; "
            f"open {model} (beside it) instead",
            0,
        )
    if magic != S.MAGIC:
        raise cur.error(f"not a GoldSrc model: expected the identifier 'IDST', found {magic!r}", 0)
    version = int(np.frombuffer(cur.data, "<i4", 1, 4)[0])
    if version != S.VERSION:
        raise cur.error(f"studio model version {version} is not GoldSrc's version 10", 4)
    return cur.view_at(S.HEADER, 0, 1, "GoldSrc studiohdr_t header")[0]


def _records(cur: Cursor, header: np.void, count: str, index: str, dtype: np.dtype, what: str) -> np.ndarray:
    n = int(header[count])
    if n == 0:
        return np.zeros(0, dtype=dtype)
    with cur.section(what):
        return cur.array_at(dtype, int(header[index]), n, what)


def _textures(cur: Cursor, header: np.void) -> tuple[list[GsTexture], np.ndarray]:
    records = _records(cur, header, "numtextures", "textureindex", S.TEXTURE, "textures")
    textures = [_texture(cur, r, i) for i, r in enumerate(records)]
    families, refs = int(header["numskinfamilies"]), int(header["numskinref"])
    if families < 0 or refs < 0:
        raise cur.error(f"negative skin table size {families} × {refs}", 0)
    if families * refs == 0:
        return textures, np.zeros((0, 0), dtype=np.int16)
    budget = current_budget()
    budget.check(cur.path, "skin table entries (families × references)", families * refs, budget.skin_entries)
    with cur.section("skin families"):
        skins = cur.array_at(np.dtype("<i2"), int(header["skinindex"]), families * refs, "skin table")
    return textures, skins.reshape(families, refs)


def _texture(cur: Cursor, record: np.void, index: int) -> GsTexture:
    name = fixed_string(bytes(record["name"]))
    width, height, offset = int(record["width"]), int(record["height"]), int(record["index"])
    texture = GsTexture(name or f"texture{index}", int(record["flags"]), width, height, None, None)
    if width <= 0 or height <= 0:
        raise cur.error(f"texture {index} ('{name}') has size {width} × {height}", int(record["index"]))
    budget = current_budget()
    budget.check(cur.path, f"texture '{name}'", width * height, budget.texture_pixels, "pixels")
    with cur.section(f"texture '{name}'"):
        pixels = cur.array_at(np.dtype(np.uint8), offset, width * height + 768, f"pixels and palette of '{name}'")
    texture.indices = pixels[: width * height].reshape(height, width)
    texture.palette = pixels[width * height :].reshape(256, 3)
    return texture


def _sequences(cur: Cursor, header: np.void) -> list[GsSequence]:
    records = _records(cur, header, "numseq", "seqindex", S.SEQUENCE, "sequences")
    base = int(header["seqindex"])
    budget = current_budget()
    events = int(np.maximum(records["numevents"], 0).sum(dtype=np.int64)) if len(records) else 0
    budget.check(cur.path, "animation events over all sequences", events, budget.events)
    # whole columns as Python values at once: per record and field, numpy's scalar access was most of the cost
    columns = {name: records[name].tolist() for name in S.SEQUENCE.names}
    out = []
    for i in range(len(records)):
        label = fixed_string(columns["label"][i]) or f"sequence{i}"
        numevents = columns["numevents"][i]
        with cur.section(f"sequence '{label}'"):
            events = cur.array_at(S.EVENT, columns["eventindex"][i], numevents, "events") if numevents else []
            pivots = _pivots(cur, records[i]) if columns["numpivots"][i] else np.zeros(0, S.PIVOT)
        out.append(
            GsSequence(
                label=label,
                fps=columns["fps"][i],
                flags=columns["flags"][i],
                activity=columns["activity"][i],
                actweight=columns["actweight"][i],
                numframes=columns["numframes"][i],
                motiontype=columns["motiontype"][i],
                motionbone=columns["motionbone"][i],
                linearmovement=tuple(columns["linearmovement"][i]),
                numblends=columns["numblends"][i],
                animindex=columns["animindex"][i],
                seqgroup=columns["seqgroup"][i],
                blendtype=tuple(columns["blendtype"][i]),
                blendstart=tuple(columns["blendstart"][i]),
                blendend=tuple(columns["blendend"][i]),
                events=[
                    GsEvent(e, k, t, fixed_string(o))
                    for e, k, t, o in zip(*(events[f].tolist() for f in S.EVENT.names), strict=True)
                ]
                if numevents
                else [],
                pivots=pivots,
                offset=base + i * S.SEQUENCE.itemsize,
            )
        )
    return out


def _pivots(cur: Cursor, record: np.void) -> np.ndarray:
    """The sequence's pivots (foot positions; nothing here uses them). Xash3D's compiler writes an offset in their
    count, so pivots that do not fit the file are left out rather than failing a model that plays fine."""
    try:
        return cur.array_at(S.PIVOT, int(record["pivotindex"]), int(record["numpivots"]), "pivots")
    except FormatError:
        return np.zeros(0, S.PIVOT)


def _body_parts(cur: Cursor, header: np.void, bone_count: int) -> list[GsBodyPart]:
    parts = []
    budget = current_budget()
    # running totals; command lists shared by several meshes are walked (and charged) once
    totals = {"vertices": 0, "triangles": 0, "walked": 0, "lists": {}}
    for b, record in enumerate(_records(cur, header, "numbodyparts", "bodypartindex", S.BODY_PART, "body parts")):
        name = fixed_string(bytes(record["name"])) or f"bodypart{b}"
        with cur.section(f"body part '{name}'"):
            models = cur.array_at(S.MODEL, int(record["modelindex"]), int(record["nummodels"]), "models")
            parts.append(
                GsBodyPart(name, int(record["base"]), [_model(cur, m, bone_count, budget, totals) for m in models])
            )
    return parts


def _model(cur: Cursor, record: np.void, bone_count: int, budget, totals: dict) -> GsModel:
    name = fixed_string(bytes(record["name"]))
    nv, nn = int(record["numverts"]), int(record["numnorms"])
    totals["vertices"] += max(nv, 0)
    budget.check(cur.path, "vertices over all models", totals["vertices"], budget.vertices)
    with cur.section(f"model '{name}'"):
        vertex_bones = cur.array_at(np.dtype(np.uint8), int(record["vertinfoindex"]), nv, "vertex bones")
        vertices = cur.array_at(np.dtype(("<f4", 3)), int(record["vertindex"]), nv, "vertices")
        normal_bones = cur.array_at(np.dtype(np.uint8), int(record["norminfoindex"]), nn, "normal bones")
        normals = cur.array_at(np.dtype(("<f4", 3)), int(record["normindex"]), nn, "normals")
        for what, bones in (("vertex", vertex_bones), ("normal", normal_bones)):
            if len(bones) and int(bones.max()) >= bone_count:
                raise cur.error(
                    f"a {what} of model '{name}' is on bone {int(bones.max())}, but the model has {bone_count} bones",
                    int(record["vertinfoindex" if what == "vertex" else "norminfoindex"]) + int(bones.argmax()),
                )
        meshes = []
        for m, mesh in enumerate(cur.array_at(S.MESH, int(record["meshindex"]), int(record["nummesh"]), "meshes")):
            corners = totals["lists"].get(int(mesh["triindex"]))
            if corners is None:
                what = f"triangle commands of mesh {m} of model '{name}'"
                corners, work = mesh_corners(cur, int(mesh["triindex"]), what, budget.triangles - totals["walked"])
                totals["walked"] += work
                totals["lists"][int(mesh["triindex"])] = corners
            totals["triangles"] += len(corners) // 3
            budget.check(cur.path, "triangles over all models", totals["triangles"], budget.triangles)
            if len(corners):
                refs = corners[:, :2].astype(np.int64)
                if int(refs[:, 0].max()) >= nv or int(refs[:, 1].max()) >= nn or int(refs.min()) < 0:
                    raise cur.error(
                        f"mesh {m} of model '{name}' uses vertex {int(refs[:, 0].max())} and normal "
                        f"{int(refs[:, 1].max())}, but the model has {nv} vertices and {nn} normals",
                        int(mesh["triindex"]),
                    )
            meshes.append(GsMesh(int(mesh["skinref"]), corners))
    return GsModel(name, vertices, vertex_bones, normals, normal_bones, meshes)


def attach_companions(gs: GsFile, path: str) -> None:
    """The texture file (when the model has no textures) and the sequence-group files, found beside the model."""
    folder = os.path.dirname(os.path.abspath(path))
    stem = os.path.splitext(os.path.basename(path))[0]
    if not gs.textures:
        found = _beside(folder, path, stem + "T.mdl")
        if found is not None:
            try:
                texture_file = read_goldsrc_bytes_textures(read_file(found), found)
            except BudgetExceeded:
                raise
            except FormatError as exc:  # the model still shows, untextured
                gs.warnings.add(f"the textures were not imported: {exc.message}")
            else:
                gs.textures, gs.skins, gs.texture_file = texture_file.textures, texture_file.skins, found
        elif any(bp.models for bp in gs.body_parts):
            gs.warnings.add(f"the model keeps its textures in '{stem}T.mdl', which was not found beside it")
    for g, group in enumerate(gs.groups):
        if g == 0 or not any(s.seqgroup == g for s in gs.sequences):
            continue
        where = _group_file(folder, path, group.name, stem, g)
        if isinstance(where, str) and not where.startswith("\0"):
            try:
                data = read_file(where)
            except BudgetExceeded:
                raise
            except FormatError as exc:
                gs.warnings.add(f"sequence group {g} was not read: {exc.message}; its sequences were not imported")
                continue
            if data[:4] != S.SEQUENCE_GROUP_MAGIC:
                gs.warnings.add(
                    f"sequence group {g} file '{os.path.basename(where)}' is not a sequence group (IDSQ); "
                    "its sequences were not imported"
                )
                continue
            gs.group_data[g] = (data, where)
        else:
            gs.warnings.add(where[1:] if isinstance(where, str) else f"sequence group {g} was not found")


def read_goldsrc_bytes_textures(data: bytes, path: str) -> GsFile:
    """A ``<name>T.mdl``: only its textures and skin table are wanted (it has no bones or body parts)."""
    cur = Cursor(data, path)
    header = _header(cur, path)
    textures, skins = _textures(cur, header)
    gs = GsFile(
        path,
        "",
        0,
        (0.0, 0.0, 0.0),
        np.zeros(0, S.BONE),
        [],
        np.zeros(0, S.BONE_CONTROLLER),
        np.zeros(0, S.HITBOX),
        [],
        [],
        textures,
        skins,
        [],
        [],
        data,
    )
    return gs


def _beside(folder: str, model_path: str, name: str) -> str | None:
    real = listing(folder).get(name.lower())
    return current(model_path).find(folder, real) if real is not None else None


def _group_file(folder: str, model_path: str, name: str, stem: str, g: int) -> str:
    """The path of group ``g``'s file, or a refusal/absence message prefixed with a NUL."""
    parts = relative_parts(name)
    if name and (parts is None or ".." in parts):
        return (
            f"\0sequence group {g} names '{name}', outside the model's folder; refused (its sequences were not "
            "imported)"
        )
    wanted = parts[-1] if parts else f"{stem}{g:02d}.mdl"
    found = _beside(folder, model_path, wanted)
    if found is None and wanted.lower() != f"{stem}{g:02d}.mdl".lower():
        found = _beside(folder, model_path, f"{stem}{g:02d}.mdl")
    if found is None:
        return f"\0sequence group {g} file '{wanted}' was not found beside the model; its sequences were not imported"
    return found
