"""Read a Vampire: The Masquerade – Bloodlines model (MDL version 2531) into the same records as 44–49.

Bloodlines has no ``.vvd``: each model keeps its own vertices, so the reader decodes them into a pool shaped like
a VVD's (``MdlFile.own_vertices``) and everything after it (VTX strips, scene assembly) works as for later Source.
Offsets are relative to the struct that holds them and every table is bounds-checked before it is read, as in
``mdl``. Animations and sequences (with their events: ``structs2531.EVENT``) are listed here, animations decoded
on demand (``animation2531``); the included models are named (``includes2531``) and loaded as 44–49's are
(``includes``). Flex descriptors, controllers and rules, eyeballs and each mesh's flexes are read
(``structs2531``); a flex vertex's delta is a direction in a table and a length (``directions2531``), decoded here
into the deltas 44–49 store, so flexes become shape keys and VTA frames as theirs do. The quantised layouts' normal
codes are decoded with the same tables.
"""

from __future__ import annotations

import numpy as np

from ...budget import current_budget
from ..binary import Cursor
from . import directions2531 as directions
from . import faces
from . import structs as S
from . import structs2531 as B
from .attachments import read_attachments
from .includes2531 import include_names
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
    VvdFile,
)
from .records import as_layout, records, records_at, rel

# A skinned vertex's weights are 255ths.
WEIGHT_SCALE = 1.0 / 255.0


def read_mdl2531_bytes(data: bytes, path: str | None = None) -> MdlFile:
    cur = Cursor(data, path)
    (raw,) = cur.array_at(B.HEADER, 0, 1, "version 2531 studiohdr_t header")
    name = raw["name"].tobytes().split(b"\0", 1)[0].decode("latin-1")
    raw_bones = records(cur, raw, "numbones", "boneindex", B.BONE, "bones")
    bones = as_layout(raw_bones, S.BONE)
    base = int(raw["boneindex"])
    bone_names = [
        cur.string_at(rel(cur, base + i * B.BONE.itemsize, offset), f"name of bone {i}")
        for i, offset in enumerate(bones["sznameindex"].tolist())
    ]
    parents = bones["parent"]
    wrong = (parents >= np.arange(len(bones))) | (parents < -1)
    if wrong.any():
        bad = int(np.nonzero(wrong)[0][0])
        raise cur.error(
            f"bone {bad} ('{bone_names[bad]}') has parent {int(parents[bad])}; parents must come first",
            base + bad * B.BONE.itemsize + 4,
        )
    moved = _skinned_bind_pose(bones)
    pool: list[np.ndarray] = []
    tangents: list[np.ndarray] = []
    flex_names = faces.flex_names(cur, raw)
    body_parts = _body_parts(cur, raw, len(bones), len(flex_names), pool, tangents)
    vertices = np.concatenate(pool) if pool else np.zeros(0, B.POOL_VERTEX)
    mdl = MdlFile(
        path=path,
        version=B.VERSION,
        checksum=int(raw["checksum"]),
        name=name,
        flags=int(raw["flags"]),
        bones=bones,
        bone_names=bone_names,
        body_parts=body_parts,
        textures=[
            cur.string_at(rel(cur, off, t["sznameindex"]), "texture name")
            for off, t in records_at(cur, raw, "numtextures", "textureindex", B.TEXTURE, "textures")
        ],
        cd_materials=[
            cur.string_at(int(o), "material folder")
            for o in records(cur, raw, "numcdtextures", "cdtextureindex", np.dtype("<i4"), "material folders")
        ],
        skins=_skins(cur, raw),
        attachments=read_attachments(cur, raw, len(bones), B.ATTACHMENT),
        hitbox_sets=_hitbox_sets(cur, raw, len(bones)),
        include_models=[],
        animations=_animations(cur, raw),
        sequences=_sequences(cur, raw),
        flex_names=flex_names,
        anim_block_name="",
        num_anim_blocks=0,
        anim_blocks=np.zeros((0, 2), dtype=np.int32),
        data=bytes(data),
        flex_controllers=faces.flex_controllers(cur, raw),
        flex_rules=faces.flex_rules(cur, raw),
        own_vertices=VvdFile(
            path,
            int(raw["checksum"]),
            1,
            np.array([len(vertices)] + [0] * 7, dtype=np.int64),
            vertices,
            np.concatenate(tangents) if tangents else np.zeros((0, 4), np.float32),
        ),
    )
    mdl.include_models = include_names(cur, raw, mdl.warnings)
    if len(moved):
        names = ", ".join(f"'{bone_names[i]}'" for i in moved[:5].tolist())
        mdl.warnings.add(
            f"{len(moved)} bones ({names}) rest where their vertices were skinned (poseToBone), not where their "
            "stored position puts them"
        )
    if int(raw["length"]) != cur.size:
        mdl.warnings.add(f"the header says the file is {int(raw['length'])} bytes but it is {cur.size}")
    return mdl


BIND_TOLERANCE = 1e-3  # model units and rotation-matrix entries; bones that agree do so to 1e-5


def _skinned_bind_pose(bones: np.ndarray) -> np.ndarray:
    """Bones whose stored rest pose disagrees with the inverse of their poseToBone (some characters' teeth sit 60
    units from where their vertices were skinned) take the pose the vertices were skinned to, as the engine skins
    them with poseToBone: armature, attachments and animation channels then share one bind pose. The animation
    decoder reads the file's own values. Returns the indices of the bones changed."""
    count = len(bones)
    if not count:
        return np.zeros(0, np.int64)
    pose = np.zeros((count, 4, 4))
    pose[:, :3, :] = bones["posetobone"]
    pose[:, 3, 3] = 1.0
    rot = pose[:, :3, :3]
    rigid = np.isfinite(pose).all(axis=(1, 2))
    rigid &= (
        np.abs(np.einsum("bij,bkj->bik", np.nan_to_num(rot), np.nan_to_num(rot)) - np.eye(3)).max(axis=(1, 2))
        < BIND_TOLERANCE
    )
    bind = np.zeros_like(pose)  # inverse of a rigid poseToBone
    bind[:, :3, :3] = np.swapaxes(rot, 1, 2)
    bind[:, :3, 3] = -np.einsum("bji,bj->bi", rot, pose[:, :3, 3])
    bind[:, 3, 3] = 1.0
    stored = np.zeros_like(pose)
    local = np.zeros_like(pose)
    local[:, :3, :3] = _quaternion_matrix(bones["quat"].astype(np.float64))
    local[:, :3, 3] = bones["pos"]
    local[:, 3, 3] = 1.0
    for i, parent in enumerate(bones["parent"].tolist()):
        stored[i] = stored[parent] @ local[i] if parent >= 0 else local[i]
    parents = bones["parent"].astype(np.int64)
    # a bone is moved only where its pose relative to its parent can be told: both poseToBones rigid (a crafted
    # file's singular or non-finite one leaves the bone as stored)
    parent_rigid = np.where(parents >= 0, rigid[np.maximum(parents, 0)], True)
    with np.errstate(invalid="ignore"):
        differs = rigid & parent_rigid & (np.abs(bind - stored).max(axis=(1, 2)) > BIND_TOLERANCE)
    moved = np.flatnonzero(differs)
    for i in moved.tolist():
        parent = int(parents[i])
        own = _rigid_inverse(bind[parent]) @ bind[i] if parent >= 0 else bind[i]
        bones["pos"][i] = own[:3, 3]
        bones["quat"][i] = _matrix_quaternion(own[:3, :3])
    return moved


def _rigid_inverse(pose: np.ndarray) -> np.ndarray:
    """The inverse of a rotation-and-translation 4×4 (a bind pose found rigid), without LAPACK: its
    first call after Blender resets its settings costs milliseconds, more than a small model's whole import."""
    out = np.eye(4)
    out[:3, :3] = pose[:3, :3].T
    out[:3, 3] = -pose[:3, :3].T @ pose[:3, 3]
    return out


def _quaternion_matrix(q: np.ndarray) -> np.ndarray:
    """(N, 4) x, y, z, w → (N, 3, 3)."""
    x, y, z, w = (q[:, i] for i in range(4))
    return np.stack(
        [
            np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
            np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
            np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
        ],
        -2,
    )


def _matrix_quaternion(m: np.ndarray) -> np.ndarray:
    """A rotation matrix → x, y, z, w (the largest component first, for precision)."""
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(1.0 + trace)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, s / 4]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(max(1.0 + m[i, i] - m[j, j] - m[k, k], 1e-12))
        q = [0.0, 0.0, 0.0, (m[k, j] - m[j, k]) / s]
        q[i], q[j], q[k] = s / 4, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
    return np.array(q) / np.linalg.norm(q)


def _body_parts(
    cur: Cursor,
    header: np.void,
    num_bones: int,
    num_flexes: int,
    pool: list[np.ndarray],
    tangents: list[np.ndarray],
) -> list[MdlBodyPart]:
    parts = []
    flexes_read = [0]  # over all meshes, against the shape key budget
    first = 0  # where the next model's vertices start in the pool
    for b, (bp_off, bp) in enumerate(
        records_at(cur, header, "numbodyparts", "bodypartindex", S.BODYPART, "body parts")
    ):
        name = cur.string_at(rel(cur, bp_off, bp["sznameindex"]), f"name of body part {b}")
        models = []
        for m, (m_off, rec) in enumerate(
            records_at(cur, bp, "nummodels", "modelindex", B.MODEL, f"models of body part '{name}'", bp_off)
        ):
            what = f"model {m} of '{name}'"
            count = int(rec["numvertices"])
            meshes = []
            for k, (me_off, r) in enumerate(
                records_at(cur, rec, "nummeshes", "meshindex", B.MESH, f"meshes of {what}", m_off)
            ):
                start, size = int(r["vertexoffset"]), int(r["numvertices"])
                if start < 0 or size < 0 or start + size > count:
                    raise cur.error(
                        f"mesh {k} of {what} holds vertices {start}..{start + size - 1} of the model's {count}",
                        me_off + 8,
                    )
                flexes = _flexes(cur, me_off, r, num_flexes, f"mesh {k} of {what}", flexes_read)
                meshes.append(
                    MdlMesh(
                        int(r["material"]),
                        size,
                        start,
                        int(r["materialtype"]),
                        int(r["materialparam"]),
                        len(flexes),
                        np.zeros(8, dtype=np.int32),
                        flexes,
                    )
                )
            if count < 0:
                raise cur.error(f"{what} declares {count} vertices", m_off + 144)
            if count:
                # Decoded vertices take up to 6× their stored bytes: bounded like the vertices an import builds.
                budget = current_budget()
                budget.check(cur.path, "vertices stored in the model", first + count, budget.vertices)
                pool.append(_vertices(cur, m_off, rec, num_bones, what))
                tangents.append(_tangents(cur, m_off, rec, what))
            models.append(
                MdlModel(
                    rec["name"].tobytes().split(b"\0", 1)[0].decode("latin-1"),
                    count,
                    first,
                    meshes,
                    int(rec["numeyeballs"]),
                    faces.eyeballs(cur, m_off, rec, B.EYEBALL),
                )
            )
            first += count
        parts.append(MdlBodyPart(name, max(int(bp["base"]), 1), models))
    return parts


FLEX_COUNT_AT = B.MESH.fields["numflexes"][1]
FLEX_DESC_AT = B.FLEX.fields["flexdesc"][1]
FLEX_SIZE_AT = B.FLEX.fields["numverts"][1]


def _flexes(cur: Cursor, mesh_off: int, mesh: np.void, num_flexes: int, what: str, read: list[int]) -> list[MdlFlex]:
    """A mesh's flexes with their vertex lists (offsets relative to each flex), every descriptor and vertex index
    checked; their count over all meshes is held to the shape key budget (each would be one). Compilers lay the
    lists back to back: such a run is read as one table (a crafted file's scattered lists are read one by one)."""
    count = int(mesh["numflexes"])
    if count < 0:
        raise cur.error(f"{what} declares {count} flexes", mesh_off + FLEX_COUNT_AT)
    if not count:
        return []
    read[0] += count
    budget = current_budget()
    budget.check(cur.path, "flexes over all meshes", read[0], budget.shape_keys, offset=mesh_off + FLEX_COUNT_AT)
    first = mesh_off + int(mesh["flexindex"])
    flexes = cur.array_at(B.FLEX, first, count, f"flexes of {what}")
    at = first + B.FLEX.itemsize * np.arange(count)
    descs = flexes["flexdesc"]
    bad = np.flatnonzero((descs < 0) | (descs >= num_flexes))
    if len(bad):
        k = int(bad[0])
        raise cur.error(
            f"a flex of {what} names flex descriptor {int(descs[k])}; the model has {num_flexes}",
            int(at[k]) + FLEX_DESC_AT,
        )
    sizes = flexes["numverts"].astype(np.int64)
    if (sizes < 0).any():
        k = int(np.flatnonzero(sizes < 0)[0])
        raise cur.error(f"a flex of {what} declares {int(sizes[k])} vertices", int(at[k]) + FLEX_SIZE_AT)
    starts = at + flexes["vertindex"]
    ends = np.cumsum(sizes)
    if (starts[1:] == starts[:-1] + B.VERTANIM.itemsize * sizes[:-1]).all():
        tables = np.split(
            cur.array_at(B.VERTANIM, int(starts[0]), int(ends[-1]), f"vertices of flexes of {what}"), ends[:-1]
        )
    else:
        tables = [
            cur.array_at(B.VERTANIM, int(s), int(n), f"vertices of a flex of {what}")
            for s, n in zip(starts.tolist(), sizes.tolist(), strict=True)
        ]
    size = int(mesh["numvertices"])
    for k, verts in enumerate(tables):
        if len(verts) and int(verts["index"].max()) >= size:
            raise cur.error(
                f"a flex of {what} moves vertex {int(verts['index'].max())} of a {size}-vertex mesh", int(starts[k])
            )
        bad = directions.bad_words(verts["direction"])
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise cur.error(
                f"vertex {j} of a flex of {what} has delta direction {int(verts['direction'][j])}, which names no "
                "direction",
                int(starts[k]) + j * B.VERTANIM.itemsize + DIRECTION_AT,
            )
    return [
        MdlFlex(int(d), 0, v["index"].astype(np.int64), _deltas(v), np.zeros(len(v), np.float32), t)
        for d, t, v in zip(descs.tolist(), flexes["target"], tables, strict=True)
    ]


DIRECTION_AT = B.VERTANIM.fields["direction"][1]
DELTA_UNIT = 1.0 / 32.0  # model units per step of a delta's length


def _deltas(verts: np.ndarray) -> np.ndarray:
    """A flex's position deltas: its direction entries scaled by their lengths. (The normals' changes, stored the
    same way, are not kept: the import and the VTA take normals from the shape itself, as for 44–49.)"""
    length = verts["length"].astype(np.float32) * np.float32(DELTA_UNIT)
    return directions.from_words(verts["direction"]) * length[:, None]


def _vertices(cur: Cursor, model_off: int, model: np.void, num_bones: int, what: str) -> np.ndarray:
    """One model's vertices, decoded into the pool layout (one numpy pass per field, no per-vertex loop)."""
    kind = int(model["vertexlisttype"])
    layout = B.VERTEX_LAYOUTS.get(kind)
    if layout is None:
        raise cur.error(f"{what} has vertex list type {kind}; 0, 1 and 2 are known", model_off + 156)
    count = int(model["numvertices"])
    raw = cur.view_at(layout, model_off + int(model["vertexindex"]), count, f"vertices of {what}")
    out = np.zeros(count, dtype=B.POOL_VERTEX)
    if kind == 0:
        weights = raw["weights"]
        used = weights > 0
        bones = raw["bones"]
        if (used & ((bones < 0) | (bones >= max(num_bones, 1)))).any():
            raise cur.error(f"a vertex of {what} is weighted to a bone the model does not have", model_off)
        # slots in use first, so that ``numbones`` counts the leading slots (the scene reads them that way)
        order = np.argsort(~used, axis=1, kind="stable")
        out["weights"] = np.take_along_axis(weights, order, 1) * np.float32(WEIGHT_SCALE)
        out["bones"] = np.where(np.take_along_axis(used, order, 1), np.take_along_axis(bones, order, 1), 0)
        out["numbones"] = used.sum(axis=1)
        out["pos"] = raw["pos"]
        out["normal"] = raw["normal"]
        out["uv"] = raw["uv"]
        return out
    offset = model["vertexoffset"].astype(np.float32)
    scale = model["vertexscale"].astype(np.float32)
    if kind == 2:  # 8-bit: the scale is the model's extent
        scale = scale / np.float32(255.0)
    out["pos"] = offset + scale * raw["pos"].astype(np.float32)
    out["normal"] = _normals(cur, raw, kind, model_off + int(model["vertexindex"]), what)
    out["uv"] = raw["uv"].astype(np.float32) / np.float32(65535.0)
    out["weights"][:, 0] = 1.0  # unskinned: every vertex rides the first bone
    out["numbones"] = 1
    return out


def _normals(cur: Cursor, raw: np.ndarray, kind: int, at: int, what: str) -> np.ndarray:
    """A quantised vertex's normal from its code (``directions2531``): the unskinned layout's 16-bit word at
    offset 6 is a byte offset into the 5,314-entry table, the compressed layout's byte at offset 3 an entry of the
    202-entry one."""
    if kind == 1:
        codes = raw["normal"].astype(np.int64) | (raw["unknown"].astype(np.int64) << 8)
        bad = directions.bad_words(codes)
    else:
        codes = raw["normal"].astype(np.int64)
        bad = codes >= len(directions.byte_table())
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        field = raw.dtype.fields["normal"][1]
        raise cur.error(
            f"vertex {k} of {what} has normal code {int(codes[k])}, which names no direction",
            at + k * raw.dtype.itemsize + field,
        )
    return directions.from_words(codes) if kind == 1 else directions.byte_table()[codes]


def _tangents(cur: Cursor, model_off: int, model: np.void, what: str) -> np.ndarray:
    count = int(model["numvertices"])
    if not int(model["tangentsindex"]):
        return np.zeros((count, 4), np.float32)
    return cur.array_at(np.dtype(("<f4", 4)), model_off + int(model["tangentsindex"]), count, f"tangents of {what}")


MAX_SKIN_FAMILIES = 32


def _skins(cur: Cursor, header: np.void) -> np.ndarray:
    families, refs = int(header["numskinfamilies"]), int(header["numskinref"])
    if families <= 0 or refs <= 0:
        return np.zeros((min(max(families, 0), MAX_SKIN_FAMILIES), max(refs, 0)), dtype=np.int16)
    return cur.array_at(np.dtype("<i2"), int(header["skinindex"]), families * refs, "skin table").reshape(
        families, refs
    )


def _hitbox_sets(cur: Cursor, header: np.void, num_bones: int) -> dict[str, list[MdlHitbox]]:
    out: dict[str, list[MdlHitbox]] = {}
    for i, (hs_off, hs) in enumerate(
        records_at(cur, header, "numhitboxsets", "hitboxsetindex", S.HITBOXSET, "hitbox sets")
    ):
        name = cur.string_at(rel(cur, hs_off, hs["sznameindex"]), "hitbox set name", optional=True) or f"set{i}"
        boxes = records(cur, hs, "numhitboxes", "hitboxindex", B.BBOX, f"hitboxes of '{name}'", hs_off)
        out[name] = [
            MdlHitbox(int(b["bone"]), int(b["group"]), b["bbmin"].copy(), b["bbmax"].copy(), "") for b in boxes
        ]
    return out


def _animations(cur: Cursor, header: np.void) -> list[MdlAnimation]:
    """The descriptors (decoded on demand by ``animation2531``); offsets are relative to each descriptor."""
    return [
        MdlAnimation(
            cur.string_at(rel(cur, off, a["sznameindex"]), "animation name"),
            float(a["fps"]),
            0,  # 2531's flag 0x1 is looping; nothing here is a delta
            int(a["numframes"]),
            0,
            0,
            off,
            int(a["animindex"]),
            0,
        )
        for off, a in records_at(cur, header, "numlocalanim", "localanimindex", B.ANIMDESC, "animations")
    ]


def _sequences(cur: Cursor, header: np.void) -> list[MdlSequence]:
    """Names, activities, animation grids (inline in 2531: ``groupsize[0]`` × ``groupsize[1]`` cells of a 16 × 16
    table; only single-cell grids were seen) and events, named by their options as 44–49's old-style events are."""
    out = []
    for off, q in records_at(cur, header, "numlocalseq", "localseqindex", B.SEQDESC, "sequences"):
        rows, cols = (min(max(int(v), 0), 16) for v in q["groupsize"])
        name = cur.string_at(rel(cur, off, q["szlabelindex"]), "sequence name")
        out.append(
            MdlSequence(
                name,
                cur.string_at(rel(cur, off, q["szactivitynameindex"]), "activity name", optional=True),
                int(q["flags"]),
                q["anim"][:rows, :cols].ravel().tolist(),
                [
                    MdlEvent(float(e["cycle"]), int(e["event"]), event_options(e))
                    for e in sequence_events(cur, off, q, name)
                ],
            )
        )
    return out


EVENT_COUNT_AT = B.SEQDESC.fields["numevents"][1]


def sequence_events(cur: Cursor, seq_off: int, seq: np.void, name: str) -> np.ndarray:
    """The ``EVENT`` records of the sequence at ``seq_off`` (their offset is relative to it), checked to lie in the
    file and charged to the copy budget like every table; a negative count or a table past the end is an error."""
    count = int(seq["numevents"])
    if count < 0:
        raise cur.error(f"sequence '{name}' declares {count} events", seq_off + EVENT_COUNT_AT)
    if not count:
        return np.zeros(0, B.EVENT)
    return cur.array_at(B.EVENT, seq_off + int(seq["eventindex"]), count, f"events of sequence '{name}'")


def event_options(event: np.void) -> str:
    return event["options"].tobytes().split(b"\0", 1)[0].decode("latin-1")
