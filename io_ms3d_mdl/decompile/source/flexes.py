"""Flexes back to a VTA: frame 0 is the reference SMD's vertex list (studiomdl finds each reference vertex in it by
position), then one frame per flex descriptor with the vertices it moves. A stereo flex was split by side at
compile time; each side is its own descriptor in the model, and each is written whole (its side weights already
applied), so the compiled flexes come out the same."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings
from ...formats.smd import SmdSkeleton, write_vta
from ...formats.source.model import MdlFile, MdlModel
from ...scene.types import ObjectData
from ..output import Output

VTA_SKELETON = SmdSkeleton(["root"], np.array([-1]))  # a VTA's skeleton only counts its frames


@dataclass
class FlexPart:
    vta: str
    names: list[str] = field(default_factory=list)  # flex descriptor names, frame i + 1 each


def write_flexes(
    mdl: MdlFile,
    model: MdlModel,
    obj: ObjectData,
    reference: str,
    skeleton: SmdSkeleton,
    output: Output,
    warnings: Warnings,
    turn: np.ndarray | None,
) -> FlexPart:
    descs = sorted(
        {f.desc for m in model.meshes for f in m.flexes} | {f.pair for m in model.meshes for f in m.flexes if f.pair}
    )
    descs = [d for d in descs if 0 <= d < len(mdl.flex_names)]
    mesh = obj.mesh
    base = np.asarray(mesh.positions, dtype=np.float64)
    normals = np.asarray(mesh.vertex_normals if mesh.vertex_normals is not None else np.zeros_like(base), np.float64)
    keys = [k for _, k in mesh.shape_keys]
    if len(keys) != len(descs):
        warnings.add(f"'{reference}': {len(keys)} shape keys for {len(descs)} flexes; the VTA follows the keys")
        descs = descs[: len(keys)]
    if turn is not None:
        base, normals = base @ turn.T, normals @ turn.T
    shapes = []
    names = []
    for desc, key in zip(descs, keys, strict=False):
        moved = np.asarray(key, dtype=np.float64)
        if turn is not None:
            moved = moved @ turn.T
        where = np.nonzero(np.any(moved != base, axis=1))[0]
        shapes.append((mdl.flex_names[desc], where, moved[where], normals[where]))
        names.append(mdl.flex_names[desc])
    relative = output.name(reference.rsplit("/", 1)[-1].removesuffix(".smd"), ".vta")
    with output.open(relative) as stream:
        stats = write_vta(stream, VTA_SKELETON, base, normals, shapes)
    if stats.non_finite:
        warnings.add(f"'{relative}': {stats.non_finite} nan/inf values were written as 0")
    return FlexPart(relative, names)
