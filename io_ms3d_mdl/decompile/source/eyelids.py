"""Eyelids back to the ``$model`` block's ``eyelid`` lines and their three VTA frames.

What studiomdl does with ``eyelid <type> <vta> lowerer F T neutral F T raiser F T split S eyeball <eye>`` (facts
learnt from the SDK's ``Option_Eyelid``, and Valve's ``qc_eyes``, which writes such lines): it makes a flex
descriptor named ``<type>`` (the lid) and three named ``<type>_lowerer``, ``<type>_neutral`` and ``<type>_raiser``
(the ones the face's rules drive), and three flexes of the lid descriptor, from VTA frames F, whose targets split
the lid's range: ``(-11, -10, lowerer, neutral)``, ``(lowerer, neutral, neutral, raiser)``, ``(neutral, raiser,
10, 11)``. The named eyeball (every eyeball, without ``eyeball``) gets the lid and the three descriptors in its
``upper*`` fields when the type starts with ``u``, its ``lower*`` ones when it starts with ``l``, and the three
targets T (heights from the eye's centre) as given. So the model keeps everything the line said: the targets in
the eyeball record, the frames as the lid's three flexes, told apart by their targets.

``split`` is left out (0): studiomdl scales each vertex by its side before storing the shape, so the stored shapes
are already split and a second split would scale them again. A lid that is one of its own three descriptors is a
``dummy_eyelid`` of a model compiled from DMX (its eyelids are ordinary flexes and rules): no line for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings
from ...formats.qc import QcWriter, Quoted
from ...formats.source.model import MdlFile, MdlModel
from ...scene.types import ObjectData

ROLES = ("lowerer", "neutral", "raiser")
SIDES = (("upper", "u"), ("lower", "l"))  # the record's field prefix, and the first letter studiomdl looks at


@dataclass
class Eyelid:
    desc: int  # the lid's flex descriptor; its name is the line's type
    roles: tuple[int, int, int]  # the lowerer, neutral and raiser descriptors
    targets: tuple[float, float, float]  # their heights, as the eyeball record keeps them
    eyes: list[int]  # the eyeballs (of the model) it is on
    frames: list[int] = field(default_factory=lambda: [0, 0, 0])  # VTA frame of each role (0: the base frame)


def eye_names(eyeballs: list[tuple[str, np.void]]) -> list[str]:
    """The name each eyeball gets in the QC (its stored one; ``eye<k>`` when it has none)."""
    return [name or f"eye{k}" for k, (name, _record) in enumerate(eyeballs)]


def find_eyelids(mdl: MdlFile, eyeballs: list[tuple[str, np.void]], warnings: Warnings) -> list[Eyelid]:
    """The model's eyelids, one per lid descriptor (eyeballs sharing a lid share its line), from the eyeball
    records; lids a line cannot give back (names studiomdl would not make) are left to the flex list, with a
    warning."""
    names = mdl.flex_names
    lids: dict[int, Eyelid] = {}
    for k, (_name, r) in enumerate(eyeballs):
        for side, letter in SIDES:
            lid = int(r[f"{side}lidflexdesc"])
            lowerer, neutral, raiser = (int(d) for d in r[f"{side}flexdesc"])
            roles = (lowerer, neutral, raiser)
            valid = 0 <= lid < len(names) and all(0 <= d < len(names) for d in roles)
            if not valid or lid in roles or len(set(roles)) < 3:  # none, a dummy_eyelid (DMX), or damaged
                continue
            if lid in lids:
                lids[lid].eyes.append(k)
                continue
            kind = names[lid]
            expected = [f"{kind}_{role}".lower() for role in ROLES]
            if not kind.startswith(letter) or [names[d].lower() for d in roles] != expected:
                warnings.add(
                    f"eyelid '{kind}': its flexes are not named as an eyelid line names them ('{letter}...' and"
                    f" '{kind}_lowerer', '_neutral', '_raiser'); written as plain flexes"
                )
                continue
            low, mid, high = (float(t) for t in r[f"{side}target"])
            targets = (low, mid, high)
            lids[lid] = Eyelid(lid, roles, targets, [k])
            radius = float(r["radius"])
            if any(abs(t) > radius for t in targets):
                warnings.add(f"eyelid '{kind}': a target is beyond the eyeball's radius {radius:g} (studiomdl refuses)")
    for lid in lids.values():
        if 1 < len(lid.eyes) < len(eyeballs):  # a line names one eyeball, or every one
            warnings.add(
                f"eyelid '{names[lid.desc]}' is on {len(lid.eyes)} of {len(eyeballs)} eyeballs: written on the first"
            )
    return sorted(lids.values(), key=lambda lid: lid.desc)  # in the file's order: a recompile numbers them so


def knows_file_vertices(obj: ObjectData) -> bool:
    """Whether ``obj`` says which file vertex each of its vertices is (not a mesh made in Blender)."""
    used = obj.mesh.source_vertices
    return used is not None and len(used) == len(obj.mesh.positions)


def eyelid_shapes(
    mdl: MdlFile,
    model: MdlModel,
    obj: ObjectData,
    lids: list[Eyelid],
    base: np.ndarray,
    normals: np.ndarray,
    turn: np.ndarray | None,
    first: int,
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """Each lid's stored shapes as VTA frames from ``first`` on (name, moved vertices, their positions and
    normals), lowerer, neutral, raiser in turn, on the vertices of ``obj`` (``knows_file_vertices``; ``base`` and
    ``normals`` are its own, turned); a role with no shape stays on frame 0."""
    if not lids:
        return []
    used = np.asarray(obj.mesh.source_vertices, dtype=np.int64)
    size = int(used.max()) + 1 if len(used) else 0
    positions = np.asarray(obj.mesh.positions, dtype=np.float64)
    shapes = []
    for lid in lids:
        deltas = [np.zeros((size, 3)) for _ in ROLES]
        found = [False, False, False]
        for mesh in model.meshes:
            for flex in mesh.flexes:
                if flex.desc != lid.desc:
                    continue
                t = flex.targets
                role = 0 if (t[0], t[1]) == (-11, -10) else 2 if (t[2], t[3]) == (10, 11) else 1
                index = model.vertex_index + mesh.vertex_offset + flex.indices
                inside = (index >= 0) & (index < size)
                np.add.at(deltas[role], index[inside], flex.deltas[inside])
                found[role] = True
        for role in range(3):
            if not found[role]:
                continue
            # as the import builds a shape key: float32 positions plus the deltas, kept in float32
            moved = (positions + deltas[role][used]).astype(np.float32).astype(np.float64)
            if turn is not None:
                moved = moved @ turn.T
            where = np.nonzero(np.any(moved != base, axis=1))[0]
            lid.frames[role] = first + len(shapes)
            shapes.append((mdl.flex_names[lid.roles[role]], where, moved[where], normals[where]))
    return shapes


def eyelid_lines(qc: QcWriter, mdl: MdlFile, lids: list[Eyelid], vta: str, eyes: list[str]) -> None:
    """The lids' ``eyelid`` lines (after the ``eyeball`` lines they name). The roles in the order of their
    descriptors, so a recompile numbers the descriptors as the file does."""
    for lid in lids:
        words: list = ["eyelid", Quoted(mdl.flex_names[lid.desc]), Quoted(vta)]
        for role in sorted(range(3), key=lambda r: lid.roles[r]):
            words += [ROLES[role], lid.frames[role], lid.targets[role]]
        if len(lid.eyes) < len(eyes) or len(eyes) == 1:  # without it, studiomdl puts the lid on every eyeball
            words += ["eyeball", Quoted(eyes[lid.eyes[0]])]
        qc.line(*words)
