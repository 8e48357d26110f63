"""The QC facts of a Bloodlines model (MDL 2531), read from its own header (``formats.source.structs2531``) where
``details`` reads the 44–53 header: positions and boxes, surface property, pose parameters, IK chains, the bones'
surface properties; per sequence its activity weight, grid size and events (number and options:
``structs2531.EVENT``), which ``qc`` writes as numbered ``{ event ... }`` lines. The included models are named by the
reader (``formats.source.includes2531``), so their animations are written under this skeleton as for 44–53.

Flexes (their deltas decoded by the reader), eyeballs, eyelids and mouths are written as for 44–53, from the
version's own model and eyeball records. What 2531 keeps differently, and is left out rather than guessed: the
header's first vector (0.5, 0.5, 0.5 in every model looked at) is not an eye position, so no ``$eyeposition``; the
key-value fields hold no text; sequence fades, blends and transitions and jiggle bones are not read; header flags other
than the static prop and auto-generated hit boxes have no known meaning in this version, so no flag command is
written from them (their bits would name other commands in 44–53)."""

from __future__ import annotations

from contextlib import suppress

import numpy as np

from ...errors import FormatError
from ...formats.binary import Cursor
from ...formats.source import structs2531 as B
from ...formats.source.mdl2531 import event_options, sequence_events
from ...formats.source.model import MdlFile
from .details import ModelDetails, SequenceDetails, ik_chains, read_eyeballs, read_mouths, read_pose_parameters

VERSION = B.VERSION
KNOWN_FLAGS = 0x1 | 0x10  # auto-generated hit boxes, static prop
SOLID = 0x1


def _text(cur: Cursor, offset: int) -> str:
    try:
        return cur.string_at(offset, "name", optional=True)
    except FormatError:
        return ""


def bloodlines_details(data: bytes, path: str | None, mdl: MdlFile) -> ModelDetails:
    """Also keeps in ``mdl`` only the header flags this version is known to mean."""
    cur = Cursor(data, path)
    (header,) = cur.array_at(B.HEADER, 0, 1, "version 2531 studiohdr_t header")

    def text(offset: int) -> str:
        return _text(cur, offset)

    sequences = []
    with suppress(FormatError):
        records = cur.records_at(B.SEQDESC, int(header["localseqindex"]), len(mdl.sequences), "sequences")
        for (off, q), seq in zip(records, mdl.sequences, strict=True):
            rows, cols = (min(max(int(v), 1), 16) for v in q["groupsize"])
            # type 0 for all: 2531 events have no name (nor a type that would say so), each is written numbered
            events = [(int(e["event"]), 0, event_options(e)) for e in sequence_events(cur, off, q, seq.name)]
            sequences.append(SequenceDetails(actweight=int(q["actweight"]), groupsize=(rows, cols), events=events))
    pose_parameters = read_pose_parameters(cur, header, text)
    chains = []
    with suppress(FormatError):  # the chains read before one that cannot be are kept
        for chain in ik_chains(cur, header, text):
            chains.append(chain)
    base = int(header["boneindex"])
    surface_props = [
        text(base + i * B.BONE.itemsize + offset) if offset else ""
        for i, offset in enumerate(mdl.bones["surfacepropidx"].tolist())
    ]
    values, counts = np.unique(mdl.bones["contents"], return_counts=True)
    mdl.flags &= KNOWN_FLAGS
    return ModelDetails(
        eye_position=np.zeros(3, np.float32),
        illum_position=np.array(header["illumposition"], np.float32),
        hull=(np.array(header["hull_min"], np.float32), np.array(header["hull_max"], np.float32)),
        view=(np.array(header["view_bbmin"], np.float32), np.array(header["view_bbmax"], np.float32)),
        surface_prop=text(int(header["surfacepropindex"])),
        # no model-wide contents in the header: the bones' most common (studiomdl's default, solid, when none)
        contents=int(values[counts.argmax()]) if len(values) else SOLID,
        mass=0.0,
        sequences=sequences,
        pose_parameters=pose_parameters,
        nodes=[],
        keyvalues="",
        ik_chains=chains,
        eyeballs=read_eyeballs(cur, header, B.MODEL, B.EYEBALL, text),
        mouths=read_mouths(cur, header),
        bone_surface_props=surface_props,
    )
