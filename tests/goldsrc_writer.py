"""Writes GoldSrc (Half-Life 1, version 10) models from a small spec, for tests: every corner the reader handles
(strips and fans, several body parts and skin families, textures with each flag, looping and in-place sequences
with blends and events, sequence groups in ``NN.mdl`` files, textures in a ``T.mdl``) and, by editing the spec or
the bytes afterwards, the hostile classes (command lists running past their buffers, strips naming missing
vertices, texture sizes beyond the data, groups naming files outside the folder, cyclic parents, frame bombs).

Written from the layout of the HL SDK's ``studio.h`` (all offsets from the start of the file)."""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from anim_rle import encode_rle

from io_ms3d_mdl.formats.goldsrc import structs as S


@dataclass
class GBone:
    name: str
    parent: int
    value: tuple[float, ...] = (0.0,) * 6
    scale: tuple[float, ...] = (0.01,) * 3 + (0.001,) * 3


@dataclass
class GMesh:
    skinref: int
    commands: list[tuple[int, list[tuple[int, int, int, int]]]]  # (signed count sign: +1 strip / -1 fan, vertices)


@dataclass
class GModel:
    name: str
    vertices: list[tuple[float, float, float]]
    vertex_bones: list[int]
    normals: list[tuple[float, float, float]]
    normal_bones: list[int]
    meshes: list[GMesh]


@dataclass
class GBodyPart:
    name: str
    models: list[GModel]
    base: int = 1


@dataclass
class GTexture:
    name: str
    width: int
    height: int
    flags: int = 0
    seed: int = 0

    def indices(self) -> bytes:
        """A diagonal ramp with a little noise, as painted skins are (smooth areas, dithered)."""
        rng = np.random.default_rng(self.seed)
        y, x = np.mgrid[: self.height, : self.width]
        ramp = (x + y) * 255 // max(self.width + self.height - 2, 1) + rng.integers(0, 6, (self.height, self.width))
        return (ramp % 256).astype(np.uint8).tobytes()

    def palette(self) -> bytes:
        return bytes((i * 7 + c * 85) % 256 for i in range(256) for c in range(3))


@dataclass
class GSequence:
    label: str
    frames: int
    # per blend, per bone: six channels of raw shorts (a list of ``frames`` values, run-length encoded here; bytes:
    # a stream written as given) or None (the default value)
    blends: list[list[list[list[int] | bytes | None]]]
    fps: float = 30.0
    flags: int = 0
    motiontype: int = 0
    motionbone: int = 0
    events: list[tuple[int, int, str]] = field(default_factory=list)  # frame, event, options
    group: int = 0
    activity: int = 0


@dataclass
class GSpec:
    name: str = "model.mdl"
    bones: list[GBone] = field(default_factory=list)
    body_parts: list[GBodyPart] = field(default_factory=list)
    textures: list[GTexture] = field(default_factory=list)
    skins: list[list[int]] = field(default_factory=list)
    sequences: list[GSequence] = field(default_factory=list)
    groups: list[str] = field(default_factory=lambda: [""])  # file names of groups 1…; group 0 is the model
    attachments: list[tuple[str, int, tuple[float, float, float]]] = field(default_factory=list)
    hitboxes: list[tuple[int, int, tuple[float, ...], tuple[float, ...]]] = field(default_factory=list)


class _Blob:
    def __init__(self, start: int) -> None:
        self.data = bytearray(start)

    def put(self, raw: bytes, align: int = 4) -> int:
        while len(self.data) % align:
            self.data += b"\0"
        at = len(self.data)
        self.data += raw
        return at


def _name(text: str, size: int) -> bytes:
    return text.encode("latin-1")[:size].ljust(size, b"\0")


def _anim_block(seq: GSequence, bones: int) -> bytes:
    """The per-blend, per-bone channel offsets followed by the value streams (offsets from each bone's record)."""
    table_size = len(seq.blends) * bones * 12
    streams = bytearray()
    offsets = []
    for b, blend in enumerate(seq.blends):
        for bone in range(bones):
            channels = blend[bone] if bone < len(blend) else [None] * 6
            record = (b * bones + bone) * 12
            row = []
            for values in channels:
                if values is None:
                    row.append(0)
                    continue
                row.append(table_size + len(streams) - record)
                streams += values if isinstance(values, bytes) else encode_rle(values)  # bytes: a raw stream
            offsets.append(row)
    return struct.pack(f"<{len(offsets) * 6}H", *[o for row in offsets for o in row]) + bytes(streams)


def write_goldsrc(spec: GSpec, textures_only: bool = False) -> bytes:
    header = np.zeros(1, S.HEADER)
    header["id"], header["version"], header["name"] = b"IDST", 10, spec.name.encode()[:63]
    blob = _Blob(S.HEADER.itemsize)
    if not textures_only:
        bones = np.zeros(len(spec.bones), S.BONE)
        for i, b in enumerate(spec.bones):
            bones[i] = (_name(b.name, 32), b.parent, 0, [-1] * 6, b.value, b.scale)
        header["numbones"], header["boneindex"] = len(bones), blob.put(bones.tobytes())
        boxes = np.zeros(len(spec.hitboxes), S.HITBOX)
        for i, (bone, group, lo, hi) in enumerate(spec.hitboxes):
            boxes[i] = (bone, group, lo, hi)
        header["numhitboxes"], header["hitboxindex"] = len(boxes), blob.put(boxes.tobytes())
        # sequences: animation data first (group 0 in this file), then the descriptions
        seqs = np.zeros(len(spec.sequences), S.SEQUENCE)
        for i, s in enumerate(spec.sequences):
            event_index = 0
            if s.events:
                ev = np.zeros(len(s.events), S.EVENT)
                for k, (frame, event, options) in enumerate(s.events):
                    ev[k] = (frame, event, 0, _name(options, 64))
                event_index = blob.put(ev.tobytes())
            anim = blob.put(_anim_block(s, len(spec.bones))) if s.group == 0 else 0
            seqs[i]["label"], seqs[i]["fps"], seqs[i]["flags"] = _name(s.label, 32), s.fps, s.flags
            seqs[i]["activity"], seqs[i]["numevents"], seqs[i]["eventindex"] = s.activity, len(s.events), event_index
            seqs[i]["numframes"], seqs[i]["motiontype"], seqs[i]["motionbone"] = s.frames, s.motiontype, s.motionbone
            seqs[i]["numblends"], seqs[i]["animindex"], seqs[i]["seqgroup"] = len(s.blends), anim, s.group
        header["numseq"], header["seqindex"] = len(seqs), blob.put(seqs.tobytes())
        groups = np.zeros(len(spec.groups), S.SEQUENCE_GROUP)
        for i, name in enumerate(spec.groups):
            groups[i]["label"], groups[i]["name"] = (b"default", b"") if i == 0 else (b"group", _name(name, 64))
        header["numseqgroups"], header["seqgroupindex"] = len(groups), blob.put(groups.tobytes())
        atts = np.zeros(len(spec.attachments), S.ATTACHMENT)
        for i, (name, bone, org) in enumerate(spec.attachments):
            atts[i]["name"], atts[i]["bone"], atts[i]["org"] = _name(name, 32), bone, org
        header["numattachments"], header["attachmentindex"] = len(atts), blob.put(atts.tobytes())
        _body_parts(spec, header, blob)
    if textures_only or spec.textures:
        _textures(spec, header, blob)
    header["length"] = len(blob.data)
    blob.data[: S.HEADER.itemsize] = header.tobytes()
    return bytes(blob.data)


def _body_parts(spec: GSpec, header: np.ndarray, blob: _Blob) -> None:
    parts = np.zeros(len(spec.body_parts), S.BODY_PART)
    for p, part in enumerate(spec.body_parts):
        models = np.zeros(len(part.models), S.MODEL)
        for m, model in enumerate(part.models):
            meshes = np.zeros(len(model.meshes), S.MESH)
            for k, mesh in enumerate(model.meshes):
                shorts = []
                for sign, verts in mesh.commands:
                    shorts.append(sign * len(verts))
                    for v in verts:
                        shorts.extend(v)
                shorts.append(0)
                meshes[k] = (
                    sum(len(v) - 2 for _, v in mesh.commands),
                    blob.put(struct.pack(f"<{len(shorts)}h", *shorts)),
                    mesh.skinref,
                    0,
                    0,
                )
            models[m]["name"], models[m]["nummesh"] = _name(model.name, 64), len(meshes)
            models[m]["meshindex"] = blob.put(meshes.tobytes())
            models[m]["numverts"] = len(model.vertices)
            models[m]["vertinfoindex"] = blob.put(bytes(model.vertex_bones), 1)
            models[m]["vertindex"] = blob.put(np.asarray(model.vertices, "<f4").tobytes())
            models[m]["numnorms"] = len(model.normals)
            models[m]["norminfoindex"] = blob.put(bytes(model.normal_bones), 1)
            models[m]["normindex"] = blob.put(np.asarray(model.normals, "<f4").tobytes())
        parts[p] = (_name(part.name, 64), len(models), part.base, blob.put(models.tobytes()))
    header["numbodyparts"], header["bodypartindex"] = len(parts), blob.put(parts.tobytes())


def _textures(spec: GSpec, header: np.ndarray, blob: _Blob) -> None:
    records = np.zeros(len(spec.textures), S.TEXTURE)
    for t, tex in enumerate(spec.textures):
        records[t] = (_name(tex.name, 64), tex.flags, tex.width, tex.height, 0)
    header["numtextures"], header["textureindex"] = len(records), blob.put(records.tobytes())
    header["texturedataindex"] = len(blob.data)
    for t, tex in enumerate(spec.textures):
        records[t]["index"] = blob.put(tex.indices() + tex.palette(), 1)
    blob.data[int(header["textureindex"][0]) : int(header["textureindex"][0]) + records.nbytes] = records.tobytes()
    skins = np.asarray(spec.skins or [list(range(len(spec.textures)))], "<i2")
    header["numskinfamilies"], header["numskinref"] = skins.shape
    header["skinindex"] = blob.put(skins.tobytes())


def write_group(spec: GSpec, group: int) -> bytes:
    """An ``IDSQ`` file with the animation data of the sequences in ``group`` (their ``animindex`` is patched into
    the model by :func:`write_model_files`)."""
    head = struct.pack("<4si64si", b"IDSQ", 10, _name(spec.groups[group], 64), 0)
    blob = _Blob(len(head))
    for s in spec.sequences:
        if s.group == group:
            s.animindex = blob.put(_anim_block(s, len(spec.bones)))
    blob.data[: len(head)] = head
    return bytes(blob.data)


def write_model_files(spec: GSpec, folder: Path, stem: str = "model", textures_apart: bool = False) -> Path:
    """The model and its companions in ``folder``: ``<stem>NN.mdl`` per group, ``<stem>T.mdl`` if asked."""
    folder.mkdir(parents=True, exist_ok=True)
    groups = {g: write_group(spec, g) for g in range(1, len(spec.groups))}
    textures, skins = spec.textures, spec.skins
    if textures_apart:
        (folder / f"{stem}T.mdl").write_bytes(
            write_goldsrc(GSpec(f"{stem}T.mdl", textures=textures, skins=skins), True)
        )
        spec = GSpec(**{**spec.__dict__, "textures": []})
    data = bytearray(write_goldsrc(spec))
    header = np.frombuffer(bytes(data[: S.HEADER.itemsize]), S.HEADER)[0]
    for i, s in enumerate(spec.sequences):
        if s.group:
            at = int(header["seqindex"]) + i * S.SEQUENCE.itemsize + S.SEQUENCE.fields["animindex"][1]
            data[at : at + 4] = struct.pack("<i", s.animindex)
    for g, raw in groups.items():
        name = spec.groups[g].replace("\\", "/").rsplit("/", 1)[-1]
        if ".." not in spec.groups[g]:
            (folder / name).write_bytes(raw)
    path = folder / f"{stem}.mdl"
    path.write_bytes(bytes(data))
    return path


# --- a small rigged, textured, animated character --------------------------------------------------------------


def quad(skinref: int, base: int, fan: bool = False) -> GMesh:
    verts = [(base + i, base + i, s, t) for i, (s, t) in enumerate([(0, 0), (15, 0), (0, 15), (15, 15)])]
    if fan:
        return GMesh(skinref, [(-1, [verts[0], verts[1], verts[3], verts[2]])])
    return GMesh(skinref, [(1, verts)])


def character_spec(frames: int = 8) -> GSpec:
    """Two bones (a root and a child 10 units up, turned 90° about Z), a strip quad on each, a two-option body part,
    two skin families over three 16×16 textures (masked, chrome), a walk (in place along X, looping, one event)
    and a two-blend aim held in group 1."""
    bones = [GBone("root", -1, (0, 0, 0, 0, 0, 0)), GBone("arm", 0, (0, 0, 10, 0, 0, np.pi / 2))]
    verts = [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)] * 2
    body = GModel("body", verts, [0] * 4 + [1] * 4, [(0, 0, 1)] * 8, [0] * 4 + [1] * 4, [quad(0, 0), quad(1, 4, True)])
    hat = GModel("hat", verts[:4], [1] * 4, [(0, 0, 1)] * 4, [1] * 4, [quad(2, 0)])
    blank = GModel("blank", [], [], [], [], [])
    walk = [[list(range(0, 10 * frames, 10)), None, None, None, None, [i * 100 for i in range(frames)]], [None] * 6]
    aim = [[[None] * 6, [None, None, None, None, None, [b * 500] * frames]] for b in range(2)]
    return GSpec(
        name="guy.mdl",
        bones=bones,
        body_parts=[GBodyPart("body", [body]), GBodyPart("hats", [blank, hat], base=1)],
        textures=[
            GTexture("skin.bmp", 16, 16),
            GTexture("mask.bmp", 16, 16, 64, 1),
            GTexture("shiny.bmp", 16, 16, 2, 2),
        ],
        skins=[[0, 1, 2], [2, 1, 0]],
        sequences=[
            GSequence("walk", frames, [walk], fps=12, flags=1, motiontype=1, events=[(3, 1004, "step")]),
            GSequence("aim", frames, [blend for blend in aim], group=1),
        ],
        groups=["", "models/guy01.mdl"],
        attachments=[("muzzle", 1, (1.0, 0.0, 0.0))],
        hitboxes=[(0, 1, (-1, -1, -1), (1, 1, 1))],
    )


def counts_spec(spans: int = 600) -> GSpec:
    """The character with what issue 31 budgets, for the fuzzers to mutate: sequences of three and eight blends,
    a channel of ``spans`` one-frame spans (long enough to leap), and a skin table of eight families."""
    spec = character_spec()
    one_frame = b"".join(struct.pack("<BBh", 1, 1, (i * 37) % 2000 - 1000) for i in range(spans))
    long_channel = [[one_frame, None, None, None, None, [i * 10 for i in range(spans)]], [None] * 6]
    blend = [[list(range(0, 40, 10)), None, None, None, None, None], [None, None, None, None, None, [700] * 4]]
    spec.sequences += [
        GSequence("long", spans, [long_channel], flags=1),
        GSequence("aim3", 4, [blend] * 3),
        GSequence("aim8", 4, [blend] * 8, group=1),
    ]
    spec.skins = [[(f + r) % 3 for r in range(3)] for f in range(8)]
    return spec
