"""The GoldSrc (Half-Life 1, MDL version 10) decompiler: a model back to what the HL SDK's ``studiomdl`` compiles.

Files written, all beside the QC (``$cd`` and ``$cdtexture`` are the QC's folder):
- ``<model>.qc``: the commands (``qc``);
- one reference SMD per body-part option, named as the model names it (``geometry``); blank options stay ``blank``;
- one animation SMD per sequence, or per blend of a blended sequence (``<sequence>_blend<n>``), every frame as the
  engine poses it, the sequences of group files (``<model>01.mdl``…) included (``motion``);
- one 8-bit paletted BMP per texture (the model's or its ``<model>T.mdl``'s), palette and indices as stored
  (``formats.images.bmp``), named as the texture is so the SMDs' materials find it.
The readers do every decoding (``formats.goldsrc``); this package only undoes what the compiler did to the sources.
"""

from __future__ import annotations

import os
import re

import numpy as np

from ...errors import BudgetExceeded, FormatError
from ...formats.goldsrc import structs as S
from ...formats.goldsrc.reader import attach_companions, read_goldsrc_bytes
from ...formats.images.bmp import paletted_bmp
from ...formats.smd import SmdSkeleton, write_smd
from ...scene.goldsrc.convert import bone_world
from ...scene.names import unique_names
from ..registry import DecompileJob, Decompiler
from .geometry import FALLBACK_SIZE, model_triangles
from .motion import sequence_frames
from .qc import QcParts, SequenceFiles, stored_names, write_qc

NAME_LIMIT = 1 << 10  # bytes of a name in a source file (GoldSrc stores at most 64)
_BMP = re.compile(r"\.bmp$", re.IGNORECASE)


def accepts(head: bytes) -> bool:
    """A GoldSrc model (``IDST`` version 10). Its companions (``IDSQ`` group files, ``T.mdl``) are refused by the
    reader with a message naming the model to open instead."""
    return (
        len(head) >= 8
        and head[:4] in (S.MAGIC, S.SEQUENCE_GROUP_MAGIC)
        and (head[:4] == S.SEQUENCE_GROUP_MAGIC or head[4:8] == b"\n\0\0\0")
    )


def run(job: DecompileJob) -> None:
    gs = read_goldsrc_bytes(job.data, job.path)
    attach_companions(gs, job.path)
    warnings = job.result.warnings
    warnings.extend(gs.warnings)
    job.result.version = S.VERSION
    out = job.output
    model_file = os.path.basename(job.path)
    stem = os.path.splitext(model_file)[0]

    bone_names = unique_names(gs.bone_names, "bone", limit=NAME_LIMIT)
    if bone_names != gs.bone_names:
        warnings.add("bone names that were empty or repeated were made unique (SMD nodes need one name each)")
    skeleton = SmdSkeleton(bone_names, gs.bones["parent"].astype(np.int64))
    world = bone_world(gs)
    rest = gs.bones["value"].astype(np.float64)[None]  # (1, bones, 6): the reference SMDs' one frame

    texture_files = [out.name(_BMP.sub("", t.name) or f"texture{i}", ".bmp") for i, t in enumerate(gs.textures)]
    renamed = [t.name for t, f in zip(gs.textures, texture_files, strict=True) if t.name != f]
    if renamed:
        warnings.add(f"textures renamed to safe, unique BMP file names: {', '.join(renamed[:5])}")
    materials, sizes = _columns(gs, texture_files)
    if gs.body_parts and not gs.textures:
        warnings.add(f"the model's textures were not found: texture coordinates assume {FALLBACK_SIZE}² texels")

    labels, part_names = stored_names(gs)
    body_parts = []
    for b, part in enumerate(gs.body_parts):
        options: list[str | None] = []
        for m, model in enumerate(part.models):
            if len(model.vertices) == 0 and not any(len(mesh.corners) for mesh in model.meshes):
                options.append(None)
                continue
            name = source_stem(model.name) or f"{part.name}_{m}"
            relative = out.name(name, ".smd")
            triangles, dropped = model_triangles(gs, model, world, materials, sizes)
            if dropped:
                warnings.add(f"'{model.name}': {dropped} degenerate triangles (a repeated vertex) were left out")
            with out.open(relative) as stream:
                stats = write_smd(stream, skeleton, rest, triangles)
            _non_finite(warnings, relative, stats.non_finite)
            options.append(relative[: -len(".smd")])
        body_parts.append((part_names[b], options))

    sequences = []
    for s, seq in enumerate(gs.sequences):
        label = labels[s]
        base = label or f"sequence{s}"
        try:
            frames = sequence_frames(gs, seq)
        except BudgetExceeded:
            raise
        except FormatError as exc:
            warnings.add(f"sequence '{label}' was not written: {exc.message}")
            sequences.append(SequenceFiles(seq, label, [], exc.message))
            continue
        smds = []
        for blend in range(len(frames)):
            name = base if len(frames) == 1 else f"{base}_blend{blend + 1}"
            relative = out.name(name, ".smd")
            if job.options.animations:
                with out.open(relative) as stream:
                    stats = write_smd(stream, skeleton, frames[blend])
                _non_finite(warnings, relative, stats.non_finite)
            smds.append(relative[: -len(".smd")])
        sequences.append(SequenceFiles(seq, label, smds))

    if job.options.textures:
        for texture, relative in zip(gs.textures, texture_files, strict=True):
            if texture.indices is not None and texture.palette is not None:
                out.write(relative, paletted_bmp(texture.indices, texture.palette))

    notes = []
    if not job.options.animations:
        notes.append("The animation SMDs were not written (animations were turned off).")
    parts = QcParts(model_file, bone_names, body_parts, texture_files, sequences, notes)
    qc = write_qc(gs, parts)
    qc_file = out.name(stem, ".qc")
    out.write(qc_file, qc.encode())
    _non_finite(warnings, qc_file, qc.non_finite)
    job.result.qc = qc_file


def source_stem(name: str) -> str:
    """A model's SMD stem from the name it stores (its source file, often a path): the last step without ``.smd``,
    other dots as ``_`` (studiomdl adds ``.smd`` to whatever it is given; other tools add it only without one)."""
    stem = re.split(r"[/\\]", name)[-1]
    return re.sub(r"\.smd$", "", stem, flags=re.IGNORECASE).replace(".", "_")


def _columns(gs, texture_files: list[str]) -> tuple[list[str], np.ndarray]:
    """Per skin-table column, the material its meshes name (family 0's texture file) and that texture's size."""
    family = gs.skins[0].tolist() if len(gs.skins) else []
    names, sizes = [], []
    for column, texture in enumerate(family):
        if 0 <= texture < len(gs.textures):
            names.append(texture_files[texture])
            sizes.append((gs.textures[texture].width, gs.textures[texture].height))
        else:
            names.append(f"missing_texture{column}.bmp")
            sizes.append((FALLBACK_SIZE, FALLBACK_SIZE))
    return names, np.array(sizes, dtype=np.float64).reshape(-1, 2)


def _non_finite(warnings, relative: str, count: int) -> None:
    if count:
        warnings.add(f"{relative}: {count} values that were not finite (nan or inf) were written as 0")


DECOMPILER = Decompiler("goldsrc", accepts, run)
