"""The few facts a QC needs that the import has no use for, read with the reader's own cursor and header layout
(``formats.source``): the header's positions and boxes, surface property, contents and mass; per sequence its
activity weight, blend grid, pose parameters, fades and transition nodes; the pose parameters and node names.
Every offset goes through the bounds-checked ``Cursor``; a field that cannot be read is left at its default."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field

import numpy as np

from ...errors import FormatError
from ...formats.binary import Cursor
from ...formats.source import structs as S
from ...formats.source.mdl import _header

SEQ_FIELDS = np.dtype(
    [
        ("actweight", "<i4", ()),
        ("groupsize", "<i4", (2,)),
        ("paramindex", "<i4", (2,)),
        ("paramstart", "<f4", (2,)),
        ("paramend", "<f4", (2,)),
        ("paramparent", "<i4", ()),
        ("fadeintime", "<f4", ()),
        ("fadeouttime", "<f4", ()),
        ("localentrynode", "<i4", ()),
        ("localexitnode", "<i4", ()),
        ("nodeflags", "<i4", ()),
        ("numautolayers", "<i4", ()),
        ("autolayerindex", "<i4", ()),
        ("weightlistindex", "<i4", ()),
    ]
)
# (field, offset in mstudioseqdesc_t) [SDK studio.h]
SEQ_OFFSETS = {
    "actweight": 20,
    "groupsize": 68,
    "paramindex": 76,
    "paramstart": 84,
    "paramend": 92,
    "paramparent": 100,
    "fadeintime": 104,
    "fadeouttime": 108,
    "localentrynode": 112,
    "localexitnode": 116,
    "nodeflags": 120,
    "numautolayers": 148,
    "autolayerindex": 152,
    "weightlistindex": 156,
}
POSEPARAM = np.dtype([("sznameindex", "<i4"), ("flags", "<i4"), ("start", "<f4"), ("end", "<f4"), ("loop", "<f4")])
AUTOLAYER = np.dtype(
    [("iSequence", "<i2"), ("iPose", "<i2"), ("flags", "<i4"), ("start", "<f4"), ("peak", "<f4"), ("tail", "<f4"),
     ("end", "<f4")]
)  # fmt: skip


@dataclass
class SequenceDetails:
    actweight: int = 0
    groupsize: tuple[int, int] = (1, 1)
    params: tuple[int, int] = (-1, -1)
    param_start: tuple[float, float] = (0.0, 0.0)
    param_end: tuple[float, float] = (0.0, 0.0)
    fadein: float = 0.2
    fadeout: float = 0.2
    entry_node: int = 0
    exit_node: int = 0
    node_flags: int = 0
    layers: list[tuple[int, int, int, float, float, float, float]] = field(default_factory=list)
    weights: np.ndarray | None = None  # (bones,) float32: the sequence's bone weights (None: unread)
    events: list[tuple[int, int, str]] = field(default_factory=list)  # per event: (number, type, options text)


IKCHAIN = np.dtype([("sznameindex", "<i4"), ("linktype", "<i4"), ("numlinks", "<i4"), ("linkindex", "<i4")])
IKLINK = np.dtype([("bone", "<i4"), ("kneedir", "<f4", 3), ("unused", "<f4", 3)])
JIGGLE_FIELDS = (
    "flags",
    "length",
    "tip_mass",
    "yaw_stiffness",
    "yaw_damping",
    "pitch_stiffness",
    "pitch_damping",
    "along_stiffness",
    "along_damping",
    "angle_limit",
    "min_yaw",
    "max_yaw",
    "yaw_friction",
    "yaw_bounce",
    "min_pitch",
    "max_pitch",
    "pitch_friction",
    "pitch_bounce",
    "base_mass",
    "base_stiffness",
    "base_damping",
    "base_min_left",
    "base_max_left",
    "base_left_friction",
    "base_min_up",
    "base_max_up",
    "base_up_friction",
    "base_min_forward",
    "base_max_forward",
    "base_forward_friction",
)
JIGGLE = np.dtype([(n, "<i4" if n == "flags" else "<f4") for n in JIGGLE_FIELDS])  # mstudiojigglebone_t
PROC_JIGGLE = 5
MOUTH = np.dtype([("bone", "<i4"), ("forward", "<f4", 3), ("flexdesc", "<i4")])


IKRULE = np.dtype(  # mstudioikrule_t, 152 bytes [SDK studio.h]
    [
        ("index", "<i4"), ("type", "<i4"), ("chain", "<i4"), ("bone", "<i4"), ("slot", "<i4"), ("height", "<f4"),
        ("radius", "<f4"), ("floor", "<f4"), ("pos", "<f4", 3), ("q", "<f4", 4), ("compressedikerrorindex", "<i4"),
        ("unused2", "<i4"), ("istart", "<i4"), ("ikerrorindex", "<i4"), ("start", "<f4"), ("peak", "<f4"),
        ("tail", "<f4"), ("end", "<f4"), ("unused3", "<f4"), ("contact", "<f4"), ("drop", "<f4"), ("top", "<f4"),
        ("unused6", "<i4", 3), ("szattachmentindex", "<i4"), ("unused", "<i4", 7),
    ]
)  # fmt: skip
assert IKRULE.itemsize == 152


@dataclass
class IkRule:
    record: np.void
    attachment: str


@dataclass
class IkChain:
    name: str
    bones: list[int]  # thigh, knee, foot
    knee: np.ndarray


@dataclass
class PoseParameter:
    name: str
    flags: int
    start: float
    end: float
    loop: float


@dataclass
class ModelDetails:
    eye_position: np.ndarray
    illum_position: np.ndarray
    hull: tuple[np.ndarray, np.ndarray]
    view: tuple[np.ndarray, np.ndarray]
    surface_prop: str
    contents: int
    mass: float
    sequences: list[SequenceDetails]
    pose_parameters: list[PoseParameter]
    nodes: list[str]
    keyvalues: str
    ik_chains: list[IkChain] = field(default_factory=list)
    eyeballs: dict[tuple[int, int], list[tuple[str, np.void]]] = field(default_factory=dict)  # (part, option)
    mouths: list[tuple[int, np.ndarray, int]] = field(default_factory=list)  # (bone, forward, flex descriptor)
    jiggles: dict[int, np.void] = field(default_factory=dict)  # bone → its jiggle record
    bone_surface_props: list[str] = field(default_factory=list)  # per bone ("" when unread)
    ik_rules: dict[int, list[IkRule]] = field(default_factory=dict)  # animation → its IK rules (in the .mdl)
    directional_light_dot: int = 0  # header byte: $constantdirectionallight × 255


def model_details(
    data: bytes, path: str | None, sequence_count: int, bones: np.ndarray | None = None, animations: tuple = ()
) -> ModelDetails:
    cur = Cursor(data, path)
    header, _ = _header(cur)
    version = int(header["version"])

    def text(offset: int) -> str:
        try:
            return cur.string_at(offset, "name", optional=True)
        except FormatError:
            return ""

    sequences = []
    base = int(header["localseqindex"])
    size = 212 if version != 53 else 232
    for i in range(sequence_count):
        details = SequenceDetails()
        off = base + i * size
        try:
            raw = {name: cur.array_at(SEQ_FIELDS[name].base, off + at, 1 if SEQ_FIELDS[name].shape == () else 2, name)
                   for name, at in SEQ_OFFSETS.items()}  # fmt: skip
        except FormatError:
            sequences.append(details)
            continue
        details.actweight = int(raw["actweight"][0])
        details.groupsize = (int(raw["groupsize"][0]), int(raw["groupsize"][1]))
        details.params = (int(raw["paramindex"][0]), int(raw["paramindex"][1]))
        details.param_start = (float(raw["paramstart"][0]), float(raw["paramstart"][1]))
        details.param_end = (float(raw["paramend"][0]), float(raw["paramend"][1]))
        details.fadein, details.fadeout = float(raw["fadeintime"][0]), float(raw["fadeouttime"][0])
        details.entry_node, details.exit_node = int(raw["localentrynode"][0]), int(raw["localexitnode"][0])
        details.node_flags = int(raw["nodeflags"][0])
        with suppress(FormatError):
            (head,) = cur.array_at(S.SEQDESC_HEAD, off, 1, "sequence")
            count = int(head["numevents"])
            if 0 < count <= 4096:
                records = cur.array_at(S.EVENT, off + int(head["eventindex"]), count, "events")
                details.events = [
                    (
                        int(r["event"]),
                        int(r["type"]),
                        r["options"].tobytes().split(b"\0", 1)[0].decode("utf-8", "replace"),
                    )
                    for r in records
                ]
        count = int(header["numbones"])
        if int(raw["weightlistindex"][0]) and 0 < count <= 4096:
            try:
                weights = cur.array_at(np.dtype("<f4"), off + int(raw["weightlistindex"][0]), count, "weight list")
                details.weights = np.nan_to_num(weights.astype(np.float32))
            except FormatError:
                pass
        layers = int(raw["numautolayers"][0])
        if 0 < layers <= 64 and version != 53:
            try:
                records = cur.array_at(AUTOLAYER, off + int(raw["autolayerindex"][0]), layers, "auto layers")
                details.layers = [
                    (int(r["iSequence"]), int(r["iPose"]), int(r["flags"]), float(r["start"]), float(r["peak"]),
                     float(r["tail"]), float(r["end"]))
                    for r in records
                ]  # fmt: skip
            except FormatError:
                pass
        sequences.append(details)
    pose_parameters = read_pose_parameters(cur, header, text)
    nodes = []
    count, names = int(header["numlocalnodes"]), int(header["localnodenameindex"])
    if 0 < count <= 1024 and names:
        try:
            nodes = [text(int(o)) for o in cur.array_at(np.dtype("<i4"), names, count, "node names")]
        except FormatError:
            nodes = []
    keyvalues = ""
    if int(header["keyvaluesize"]) > 0 and int(header["keyvalueindex"]):
        try:
            raw_kv = cur.bytes_at(int(header["keyvalueindex"]), int(header["keyvaluesize"]), "key values")
            keyvalues = raw_kv.split(b"\0", 1)[0].decode("utf-8", "replace")
        except FormatError:
            keyvalues = ""
    chains = []
    if version != 53:
        try:
            chains = list(ik_chains(cur, header, text))
        except FormatError:
            chains = []
    jiggles = {}
    if version != 53:
        bone_size = 216
        for i, (kind, proc) in enumerate(zip(bone_types(bones), bone_procs(bones), strict=True)):
            if kind == PROC_JIGGLE and proc:
                at = int(header["boneindex"]) + i * bone_size + proc
                with suppress(FormatError):
                    (jiggles[i],) = cur.array_at(JIGGLE, at, 1, "jiggle")
    eyeballs = read_eyeballs(cur, header, S.MODEL, S.EYEBALL, text) if version != 53 else {}
    mouths = read_mouths(cur, header) if version != 53 else []
    ik_rules: dict[int, list[IkRule]] = {}
    if version != 53:
        for a, desc in enumerate(animations):
            with suppress(FormatError):
                (record,) = cur.array_at(S.ANIMDESC, desc.offset, 1, "animation")
                count, index = int(record["numikrules"]), int(record["ikruleindex"])
                if 0 < count <= 64 and index:  # (rules kept in an .ani block are not read)
                    at = desc.offset + index
                    rules = cur.array_at(IKRULE, at, count, "ik rules")
                    ik_rules[a] = [
                        IkRule(r, text(at + k * IKRULE.itemsize + int(r["szattachmentindex"]))
                               if int(r["szattachmentindex"]) else "")
                        for k, r in enumerate(rules)
                    ]  # fmt: skip
    surface_props = []
    if version != 53 and bones is not None:
        for i, offset in enumerate(bones["surfacepropidx"].tolist()):
            surface_props.append(text(int(header["boneindex"]) + i * 216 + offset) if offset else "")
    return ModelDetails(
        eye_position=np.array(header["eyeposition"], np.float32),
        illum_position=np.array(header["illumposition"], np.float32),
        hull=(np.array(header["hull_min"], np.float32), np.array(header["hull_max"], np.float32)),
        view=(np.array(header["view_bbmin"], np.float32), np.array(header["view_bbmax"], np.float32)),
        surface_prop=text(int(header["surfacepropindex"])),
        contents=int(header["contents"]),
        mass=float(header["mass"]),
        sequences=sequences,
        pose_parameters=pose_parameters,
        nodes=nodes,
        keyvalues=keyvalues,
        ik_chains=chains,
        eyeballs=eyeballs,
        mouths=mouths,
        bone_surface_props=surface_props,
        ik_rules=ik_rules,
        directional_light_dot=int(header["constdirectionallightdot"]),
        jiggles=jiggles,
    )


def read_eyeballs(
    cur: Cursor, header: np.void, model_layout: np.dtype, eyeball_layout: np.dtype, text: Callable[[int], str]
) -> dict[tuple[int, int], list[tuple[str, np.void]]]:
    """Each model's eyeball records with their names, by (body part, option); none where they cannot be read.
    The layouts differ by version (Bloodlines' models and eyeballs are shorter), the fields read do not."""
    eyeballs: dict[tuple[int, int], list[tuple[str, np.void]]] = {}
    with suppress(FormatError):
        count, index = int(header["numbodyparts"]), int(header["bodypartindex"])
        for b, part in enumerate(cur.array_at(S.BODYPART, index, max(min(count, 4096), 0), "body parts")):
            part_at = index + b * S.BODYPART.itemsize
            models_at = part_at + int(part["modelindex"])
            models = cur.array_at(model_layout, models_at, max(min(int(part["nummodels"]), 4096), 0), "models")
            for m, model in enumerate(models):
                n = int(model["numeyeballs"])
                if not 0 < n <= 64:
                    continue
                at = models_at + m * model_layout.itemsize + int(model["eyeballindex"])
                records = cur.array_at(eyeball_layout, at, n, "eyeballs")
                eyeballs[(b, m)] = [
                    (text(at + k * eyeball_layout.itemsize + int(r["sznameindex"])) if int(r["sznameindex"]) else "", r)
                    for k, r in enumerate(records)
                ]
    return eyeballs


def read_mouths(cur: Cursor, header: np.void) -> list[tuple[int, np.ndarray, int]]:
    """The header's mouths (bone, forward, flex descriptor); none where they cannot be read."""
    mouths = []
    count, index = int(header["nummouths"]), int(header["mouthindex"])
    if 0 < count <= 64:
        with suppress(FormatError):
            for r in cur.array_at(MOUTH, index, count, "mouths"):
                mouths.append((int(r["bone"]), r["forward"].astype(np.float64), int(r["flexdesc"])))
    return mouths


def read_pose_parameters(cur: Cursor, header: np.void, text: Callable[[int], str]) -> list[PoseParameter]:
    """The header's pose parameters (44–53 and 2531 alike); none where their table cannot be read."""
    count, index = int(header["numlocalposeparameters"]), int(header["localposeparamindex"])
    if not 0 < count <= 1024:
        return []
    try:
        records = cur.array_at(POSEPARAM, index, count, "pose parameters")
    except FormatError:
        return []
    return [
        PoseParameter(
            text(index + k * POSEPARAM.itemsize + int(r["sznameindex"])) if int(r["sznameindex"]) else "",
            int(r["flags"]),
            float(r["start"]),
            float(r["end"]),
            float(r["loop"]),
        )
        for k, r in enumerate(records)
    ]


def ik_chains(cur: Cursor, header: np.void, text: Callable[[int], str]) -> Iterator[IkChain]:
    """The header's IK chains (44–52 and 2531 alike), one at a time: a FormatError stops them at the first chain
    whose links cannot be read, and the caller decides what the chains before it are worth."""
    count, index = int(header["numikchains"]), int(header["ikchainindex"])
    if not 0 < count <= 256:
        return
    for k, r in enumerate(cur.array_at(IKCHAIN, index, count, "ik chains")):
        at = index + k * IKCHAIN.itemsize
        links = cur.array_at(IKLINK, at + int(r["linkindex"]), min(max(int(r["numlinks"]), 0), 16), "ik links")
        name = text(at + int(r["sznameindex"])) if int(r["sznameindex"]) else f"chain{k}"
        knee = links["kneedir"][0].astype(np.float64) if len(links) else np.zeros(3)
        yield IkChain(name, [int(b) for b in links["bone"]], knee)


def bone_types(bones: np.ndarray | None) -> list[int]:
    return bones["proctype"].tolist() if bones is not None else []


def bone_procs(bones: np.ndarray | None) -> list[int]:
    return bones["procindex"].tolist() if bones is not None else []
