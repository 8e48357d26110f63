"""Flexes back to a VTA: frame 0 is the reference SMD's vertex list (studiomdl finds each reference vertex in it by
position), then one frame per flex descriptor with the vertices it moves. A stereo flex was split by side at
compile time; each side is its own descriptor in the model, and each is written whole (its side weights already
applied), so the compiled flexes come out the same. An eyelid's three shapes (one descriptor) follow the flexes,
as its ``eyelid`` line names them (``eyelids``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...errors import Warnings
from ...formats.smd import SmdSkeleton, write_vta
from ...formats.source.model import MdlFile, MdlModel
from ...scene.names import unique_names
from ...scene.source.flex import BASIS
from ...scene.types import ObjectData
from ..output import Output
from .eyelids import Eyelid, eyelid_shapes, knows_file_vertices

VTA_SKELETON = SmdSkeleton(["root"], np.array([-1]))  # a VTA's skeleton only counts its frames


@dataclass
class FlexPart:
    vta: str
    names: list[str] = field(default_factory=list)  # flex descriptor names, frame i + 1 each
    new: list[str] = field(default_factory=list)  # of those, shape keys made in Blender (no controller in the file)
    eyelids: list[Eyelid] = field(default_factory=list)  # their frames after the flexes'


def write_flexes(
    mdl: MdlFile,
    model: MdlModel,
    obj: ObjectData,
    reference: str,
    skeleton: SmdSkeleton,
    output: Output,
    warnings: Warnings,
    turn: np.ndarray | None,
    eyelids: list[Eyelid] | None = None,
) -> FlexPart:
    descs = sorted(
        {f.desc for m in model.meshes for f in m.flexes} | {f.pair for m in model.meshes for f in m.flexes if f.pair}
    )
    descs = [d for d in descs if 0 <= d < len(mdl.flex_names)]
    mesh = obj.mesh
    base = np.asarray(mesh.positions, dtype=np.float64)
    normals = np.zeros_like(base)
    if mesh.vertex_normals is not None:
        normals = np.asarray(mesh.vertex_normals, np.float64)
    elif mesh.normals is not None:  # an export's mesh: per corner, one of each vertex's corners
        normals[np.asarray(mesh.triangles).ravel()] = np.asarray(mesh.normals, np.float64)
    if turn is not None:
        base, normals = base @ turn.T, normals @ turn.T
    # Each shape key is a flex by its name: the import named them after the file's flexes (made unique); a key of
    # another name was made in Blender and is a new flex. A flex of the file left without its key (deleted or
    # renamed) is written moving nothing, so the file's rules that name it still compile.
    file_keys = unique_names([mdl.flex_names[d] for d in descs], "flex", taken=[BASIS])
    by_key = dict(zip(file_keys, descs, strict=True))
    moved_by: dict[int, np.ndarray] = {}
    new: list[tuple[str, np.ndarray]] = []
    for name, key in mesh.shape_keys:
        moved = np.asarray(key, dtype=np.float64)
        if turn is not None:
            moved = moved @ turn.T
        if name in by_key:
            moved_by[by_key[name]] = moved
        else:
            new.append((name, moved))
    # an eyelid line makes its lid's flexes (from the file's shapes, on the file's vertices): not a flex of its own
    lids = list(eyelids or []) if knows_file_vertices(obj) else []
    if eyelids and not lids:
        warnings.add(
            f"'{reference}': the mesh is Blender's (its vertices are not the file's): its {len(eyelids)} eyelids are"
            " written as plain flexes, without eyelid lines"
        )
    plain = [d for d in descs if d not in {lid.desc for lid in lids}]
    missing = [mdl.flex_names[d] for d in plain if d not in moved_by]
    if missing:
        warnings.add(
            f"'{reference}': {len(missing)} flexes have no shape key (deleted or renamed in Blender) and are written"
            f" moving nothing, e.g. '{missing[0]}'"
        )
    new_names = unique_names([n for n, _ in new], "flex", taken=list(mdl.flex_names))  # never a file flex's name
    shapes = []
    for name, moved in [(mdl.flex_names[d], moved_by.get(d, base)) for d in plain] + list(
        zip(new_names, [m for _, m in new], strict=True)
    ):
        where = np.nonzero(np.any(moved != base, axis=1))[0]
        shapes.append((name, where, moved[where], normals[where]))
    names = [name for name, *_ in shapes]
    shapes += eyelid_shapes(mdl, model, obj, lids, base, normals, turn, len(shapes) + 1)
    relative = output.name(reference.rsplit("/", 1)[-1].removesuffix(".smd"), ".vta")
    with output.open(relative) as stream:
        stats = write_vta(stream, VTA_SKELETON, base, normals, shapes)
    if stats.non_finite:
        warnings.add(f"'{relative}': {stats.non_finite} nan/inf values were written as 0")
    return FlexPart(relative, names, new_names, lids)
