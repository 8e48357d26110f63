"""The QC of a GoldSrc model, as the HL SDK's ``studiomdl`` reads it (see ``__init__`` for what the files are).

Facts of that compiler this follows:
- A command reads its arguments from its own line; ``$sequence`` reads every option from its line too, until a
  ``{`` (on that line) opens a block that may span lines: events go there. A ``//`` comment after arguments would
  stop the compile ("line is incomplete"), so comments stand on lines of their own.
- ``$eyeposition x y z`` is stored as ``(-y, x, z)``: written back turned.
- ``$bbox`` and ``$cbox`` are the header's two boxes; ``$flags`` its flags.
- A texture whose name holds ``chrome`` is made chrome and flat-shaded by the compiler; ``$texrendermode`` adds the
  other flags (the SDK's compiler knows ``masked`` and ``additive``; later ones also ``fullbright``, ``flatshade`` and
  ``chrome``).
- ``$texturegroup`` rows list the textures of the skin-table columns that differ between families, family 0 first.
- ``$sequence``'s ``rotate R`` turns the animation's roots by R + 90° (``motion``): written ``rotate -90``.
- ``$controller`` index 4 is the mouth; ``$attachment`` and ``$hbox`` name their bone; events' frames count from 0.
- Sequence groups: without ``$sequencegroup`` the compiler fills groups of at most ``$sequencegroupsize`` KB with
  the sequences that have no activity (labels empty); named groups come from ``$sequencegroup "label"`` before the
  sequences that go in them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...formats.goldsrc import structs as S
from ...formats.goldsrc.model import GsFile, GsSequence
from ...formats.qc import QcWriter, Quoted, Raw
from ...formats.text import fixed_string
from ...scene.goldsrc.convert import bone_world
from ..source.deleted_bones import DeletedBones
from .activities import activity_name
from .motion import QC_ROTATE

CONTROLS = {
    0x1: "X",
    0x2: "Y",
    0x4: "Z",
    0x8: "XR",
    0x10: "YR",
    0x20: "ZR",
    0x40: "LX",
    0x80: "LY",
    0x100: "LZ",
    0x200: "AX",
    0x400: "AY",
    0x800: "AZ",
    0x1000: "AXR",
    0x2000: "AYR",
    0x4000: "AZR",
}
CONTROLLER_TYPES = 0x7FFF  # STUDIO_TYPES; 0x8000 (RLOOP) is the compiler's own, from the range
MOUTH = 4
RENDER_MODES = ((S.MASKED, "masked"), (S.ADDITIVE, "additive"), (S.FULLBRIGHT, "fullbright"))
CHROME_BY_NAME = S.FLATSHADE | S.CHROME
GROUP_HEADER = S.SEQUENCE_GROUP_HEADER.itemsize


@dataclass
class SequenceFiles:
    sequence: GsSequence
    label: str  # as stored (the reader names an empty one for display)
    smds: list[str]  # file stems, one per blend ([] when the sequence could not be decoded)
    reason: str = ""  # why there are none


@dataclass
class NewSequence:
    """An action made in Blender, exported as a sequence of its own."""

    name: str
    smd: str  # file stem
    fps: float


@dataclass
class QcParts:
    """What the QC names, as written: file stems (relative to the QC, without ``.smd``) and texture file names."""

    model_file: str
    bone_names: list[str]
    body_parts: list[tuple[str, list[str | None]]]  # (name, per option the SMD stem or None for blank)
    texture_files: list[str]  # per texture, the BMP's name (also the SMD material)
    sequences: list[SequenceFiles]
    notes: list[str] = field(default_factory=list)  # comments for the head of the QC
    new_sequences: list[NewSequence] = field(default_factory=list)  # an export's actions made in Blender
    skins: np.ndarray | None = None  # an export's skin table (families × columns of texture indices), else the file's
    deleted: DeletedBones | None = None  # an export's bones deleted in Blender (lines re-targeted or left out)
    dropped: list[str] = field(default_factory=list)  # what they took out of the QC


def stored_names(gs: GsFile) -> tuple[list[str], list[str]]:
    """Sequence labels and body-part names exactly as the file stores them, empty ones included (the reader
    names those for display; a QC keeps ``$sequence ""`` as compiled)."""
    header = np.frombuffer(gs.data, S.HEADER, 1, 0)[0]
    labels = []
    if gs.sequences:
        records = np.frombuffer(gs.data, S.SEQUENCE, len(gs.sequences), int(header["seqindex"]))
        labels = [fixed_string(label) for label in records["label"].tolist()]
    parts = []
    if gs.body_parts:
        records = np.frombuffer(gs.data, S.BODY_PART, len(gs.body_parts), int(header["bodypartindex"]))
        parts = [fixed_string(name) for name in records["name"].tolist()]
    return labels, parts


def motion_tokens(flags: int) -> list[Raw]:
    return [Raw(name) for bit, name in CONTROLS.items() if flags & bit]


def implied_flags(name: str) -> int:
    """The texture flags the compiler gives a texture by its name alone."""
    return CHROME_BY_NAME if "chrome" in name.lower() else 0


def write_qc(gs: GsFile, parts: QcParts, check: Callable[[int], None] | None = None) -> QcWriter:
    w = QcWriter(check)
    w.comment(f"Decompiled by io_ms3d_mdl from {parts.model_file}, a GoldSrc (Half-Life) model, version 10.")
    if gs.name and gs.name != parts.model_file:
        w.comment(f"The model calls itself {gs.name!r}.")
    for note in parts.notes:
        w.comment(note)
    w.blank()
    w.command(Raw("$modelname"), Quoted(parts.model_file))
    w.command(Raw("$cd"), Quoted("."))
    w.command(Raw("$cdtexture"), Quoted("."))
    w.command(Raw("$scale"), 1.0)
    w.command(Raw("$cliptotextures"))
    if gs.texture_file:
        w.command(Raw("$externaltextures"))
    if gs.flags:
        w.command(Raw("$flags"), gs.flags)
    w.blank()
    _header(gs, w)
    _bodies(parts, w)
    _skins(gs, parts, w)
    _bones(gs, parts, w)
    _sequences(gs, parts, w)
    return w


def _header(gs: GsFile, w: QcWriter) -> None:
    header = np.frombuffer(gs.data, S.HEADER, 1, 0)[0]
    ex, ey, ez = (float(v) for v in gs.eye_position)
    w.command(Raw("$eyeposition"), ey, -ex, ez)
    for command, low, high in ((Raw("$bbox"), "min", "max"), (Raw("$cbox"), "bbmin", "bbmax")):
        box = np.concatenate([header[low], header[high]]).astype(np.float64)
        if box.any():
            w.command(command, *box.tolist())
    w.blank()


def _bodies(parts: QcParts, w: QcWriter) -> None:
    for name, options in parts.body_parts:
        if len(options) == 1 and options[0] is not None:
            w.command(Raw("$body"), Quoted(name), Quoted(options[0]))
            continue
        with w.block(Raw("$bodygroup"), Quoted(name)):
            for option in options:
                if option is None:
                    w.line(Raw("blank"))
                else:
                    w.line(Raw("studio"), Quoted(option))
    w.blank()


def _skins(gs: GsFile, parts: QcParts, w: QcWriter) -> None:
    files = parts.texture_files
    skins = gs.skins if parts.skins is None else parts.skins
    if len(skins) > 1 and skins.shape[1]:
        valid = (skins >= 0) & (skins < len(files))
        differs = np.flatnonzero(((skins != skins[0]) & valid).any(axis=0) & valid.all(axis=0))
        columns = differs.tolist() or ([0] if valid[:, 0].all() else [])  # (every entry written names a file)
        if columns:
            with w.block(Raw("$texturegroup"), Raw("skinfamilies")):
                for family in skins.tolist():
                    w.line(Raw("{"), *(Quoted(files[family[c]]) for c in columns), Raw("}"))
        if not valid.all():
            w.comment("skin-table entries naming no texture were left out")
    modes_written = False
    for texture, file in zip(gs.textures, files, strict=True):
        flags = texture.flags
        implied = implied_flags(file)
        if implied & ~flags:
            w.comment(f"{file}: its name makes it chrome, but the model stored it without chrome")
        extra = flags & ~implied
        modes = [name for bit, name in RENDER_MODES if extra & bit]
        if extra & S.CHROME:
            modes.append("chrome")
        if extra & S.FLATSHADE:
            modes.append("flatshade")
        for mode in modes:
            w.command(Raw("$texrendermode"), Quoted(file), Raw(mode))
            modes_written = True
    if modes_written or len(skins) > 1:
        w.blank()


def _bones(gs: GsFile, parts: QcParts, w: QcWriter) -> None:
    names = parts.bone_names

    def bone(index: int) -> Quoted:
        return Quoted(names[index] if 0 <= index < len(names) else "")

    deleted = parts.deleted

    def gone(index: int, what: str) -> bool:
        if deleted is None or not 0 <= index < len(deleted.kept) or deleted.kept[index]:
            return False
        parts.dropped.append(f"{what} (bone '{names[index]}' was deleted in Blender)")
        return True

    world = bone_world(gs) if deleted is not None else None
    for c in gs.controllers:
        if gone(int(c["bone"]), f"$controller {int(c['index'])}"):
            continue
        kind = int(c["type"]) & CONTROLLER_TYPES
        control = CONTROLS.get(kind)
        if control is None:
            w.comment(f"controller {int(c['index'])} on {bone(int(c['bone']))} has type {kind}, which has no name")
            continue
        index = Raw("mouth") if int(c["index"]) == MOUTH else int(c["index"])
        w.command(Raw("$controller"), index, bone(int(c["bone"])), Raw(control), float(c["start"]), float(c["end"]))
    for i, a in enumerate(gs.attachments):
        at, origin = a.bone, a.origin.astype(np.float64)
        if world is not None and 0 <= at < len(deleted.heir) and not deleted.kept[at]:
            heir = int(deleted.heir[at])
            if heir < 0:
                gone(at, f"$attachment {i}")
                continue
            origin = (np.linalg.inv(world[heir]) @ world[at] @ np.r_[origin, 1.0])[:3]  # the same place in the model
            at = heir
        w.command(Raw("$attachment"), i, bone(at), *origin.tolist())
    for box in gs.hitboxes:
        if gone(int(box["bone"]), "$hbox"):
            continue
        corners = np.concatenate([box["bbmin"], box["bbmax"]]).astype(np.float64).tolist()
        w.command(Raw("$hbox"), int(box["group"]), bone(int(box["bone"])), *corners)
    w.blank()


def _sequences(gs: GsFile, parts: QcParts, w: QcWriter) -> None:
    # groups the compiler filled by size hold only sequences without an activity, and have no labels
    labelled = any(g.label for g in gs.groups[1:]) or any(s.seqgroup > 0 and s.activity for s in gs.sequences)
    if len(gs.groups) > 1 and not labelled:
        w.command(Raw("$sequencegroupsize"), _group_kilobytes(gs))
    opened = 0
    for entry in parts.sequences:
        seq = entry.sequence
        if not 0 <= seq.seqgroup < len(gs.groups):  # (a stranger's index: no such group to open)
            w.comment(f"'{entry.label}' names sequence group {seq.seqgroup}, which the model does not have")
        elif labelled and seq.seqgroup > opened:
            for g in range(opened + 1, seq.seqgroup + 1):
                w.command(Raw("$sequencegroup"), Quoted(gs.groups[g].label))
            opened = seq.seqgroup
        elif labelled and seq.seqgroup < opened:
            w.comment(f"'{entry.label}' was in group {seq.seqgroup}, listed after group {opened}: it lands in {opened}")
        if not entry.smds:
            w.comment(f"sequence '{entry.label}' is not written: {entry.reason}")
            continue
        record = np.frombuffer(gs.data, S.SEQUENCE, 1, seq.offset)[0]
        tokens: list[object] = [Quoted(entry.label), *(Quoted(s) for s in entry.smds)]
        if seq.numblends > 1 and seq.blendtype[0] in CONTROLS:
            tokens += [Raw("blend"), Raw(CONTROLS[seq.blendtype[0]]), seq.blendstart[0], seq.blendend[0]]
        tokens += motion_tokens(seq.motiontype)
        tokens += [Raw("rotate"), QC_ROTATE, Raw("fps"), seq.fps]
        if seq.looping:
            tokens.append(Raw("loop"))
        if seq.activity:
            tokens += [Raw(activity_name(seq.activity)), seq.actweight]
        entry_node, exit_node, node_flags = (int(record[k]) for k in ("entrynode", "exitnode", "nodeflags"))
        if node_flags & 1:
            tokens += [Raw("rtransition"), entry_node, exit_node]
        elif entry_node == exit_node and entry_node:
            tokens += [Raw("node"), entry_node]
        elif entry_node or exit_node:
            tokens += [Raw("transition"), entry_node, exit_node]
        if seq.numblends > 1 and seq.blendtype[1]:
            w.comment(f"'{entry.label}' also blends by {seq.blendtype[1]} (a second blend the SDK's compiler lacks)")
        if len(seq.pivots):
            w.comment(f"'{entry.label}' has {len(seq.pivots)} pivots (foot positions), not written")
        if not seq.events:
            w.command(Raw("$sequence"), *tokens)
            continue
        w.command(Raw("$sequence"), *tokens, Raw("{"))
        w.depth += 1
        for event in seq.events:
            options = [Quoted(event.options)] if event.options else []
            w.line(Raw("event"), event.event, event.frame, *options)
        w.depth -= 1
        w.line(Raw("}"))
    for new in parts.new_sequences:
        w.command(Raw("$sequence"), Quoted(new.name), Quoted(new.smd), Raw("rotate"), QC_ROTATE, Raw("fps"), new.fps)


def _group_kilobytes(gs: GsFile) -> int:
    """A ``$sequencegroupsize`` that fills the groups as the model's are filled: the largest group's animation
    data, in KB rounded up (the compiler starts a new group when the next sequence would pass the limit)."""
    largest = 0
    for g in range(1, len(gs.groups)):
        if g in gs.group_data:
            largest = max(largest, len(gs.group_data[g][0]) - GROUP_HEADER)
    return max(1, math.ceil(largest / 1024))
