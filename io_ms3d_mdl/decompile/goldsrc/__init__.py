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
from collections.abc import Iterator
from typing import BinaryIO

import numpy as np

from ...budget import current_budget
from ...errors import FormatError
from ...formats.goldsrc import structs as S
from ...formats.goldsrc.animation import WalkAllowance
from ...formats.goldsrc.model import GsFile
from ...formats.goldsrc.reader import attach_companions, read_goldsrc_bytes
from ...formats.images.bmp import paletted_bmp
from ...formats.smd import SmdSkeleton, SmdStats, SmdTriangles, write_smd
from ...formats.smd.writer import CORNER_BYTES, nodes_text, skeleton_texts, write_triangles
from ...scene.goldsrc.animation import offers
from ...scene.goldsrc.convert import bone_world
from ...scene.names import unique_names
from ..registry import DecompileJob, Decompiler
from ..source.angles import matrix_to_euler
from ..source.deleted_bones import deleted_note, fold_frames, fold_skin, moved_note
from ..source.edits import SourceEdits, remap_bones
from ..source.new_actions import action_pose, edited_poses
from ..source.renamed_bones import rename_bones
from ..source.skeleton_edits import EditedSkeleton, edited_skeleton, without_deleted
from .edited import edited_triangles
from .geometry import FALLBACK_SIZE, model_triangles
from .motion import batch_frames
from .name_limits import check_name_lengths
from .qc import NewSequence, QcParts, SequenceFiles, stored_names, write_qc

HELD_NAMES = 8  # bones a warning names
BATCH_LINES = 1 << 18  # bone lines of animation formatted together (their text is held until written)
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
    with np.errstate(all="ignore"):  # a stranger's nan and inf are written as 0 and reported (the writers count them)
        _run(job)


def _run(job: DecompileJob) -> None:
    gs = read_goldsrc_bytes(job.data, job.path)
    attach_companions(gs, job.path)
    warnings = job.result.warnings
    warnings.extend(gs.warnings)
    job.result.version = S.VERSION
    model_file = os.path.basename(job.path)

    bone_names = unique_names(gs.bone_names, "bone", limit=NAME_LIMIT)
    if bone_names != gs.bone_names:
        warnings.add("bone names that were empty or repeated were made unique (SMD nodes need one name each)")
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    if edits is not None:
        warnings.extend(edits.notes)  # (what Blender's side could not carry over)
    renamed = rename_bones(bone_names, gs.bones["parent"], edits)  # an export's, renamed in Blender
    file_bones, bone_names = set(bone_names), renamed.names
    bones = _skeleton(gs, job, SmdSkeleton(bone_names, gs.bones["parent"].astype(np.int64)), renamed.deleted)
    texture_files = _texture_files(gs, job)
    check_name_lengths(  # (the names Blender brings: renamed or new bones, renamed textures)
        edits,
        [n for n in bones.skeleton.names if n not in file_bones],
        [f for f, t in zip(texture_files, gs.textures, strict=True) if edits is not None and t.name in edits.renamed],
    )
    _check_animation_budget(gs, job.path)
    labels, part_names = stored_names(gs)
    if job.options.animations:  # (their files are made by the writing thread while the meshes and text are built)
        job.output.expect("", sum(max(seq.numblends, 1) for seq in gs.sequences))
    body_parts = _references(gs, job, bones, texture_files, part_names)
    sequences = _animations(gs, job, bones, labels)
    new_sequences = _new_sequences(gs, job, bones, labels)
    if job.options.textures:
        for texture, relative in zip(gs.textures, texture_files, strict=True):
            if texture.indices is not None and texture.palette is not None:
                job.output.write(relative, paletted_bmp(texture.indices, texture.palette))

    notes = [] if job.options.animations else ["The animation SMDs were not written (animations were turned off)."]
    qc_check = job.output.checker(model_file)
    parts = QcParts(model_file, bone_names, body_parts, texture_files, sequences, notes, new_sequences)
    parts.skins = _edited_skins(gs, job)
    parts.deleted = bones.deleted
    qc = write_qc(gs, parts, qc_check)
    if parts.dropped:
        warnings.add(f"{len(parts.dropped)} QC lines were left out: " + "; ".join(parts.dropped[:5]))
    qc_file = job.output.name(os.path.splitext(model_file)[0], ".qc")
    job.output.write(qc_file, qc.encode())
    _non_finite(warnings, qc_file, qc.non_finite)
    job.result.qc = qc_file


def _texture_files(gs: GsFile, job: DecompileJob) -> list[str]:
    """Per texture, the BMP file it is written to: its own name where that is a safe, unique file name (in an
    export, the name of the Blender material it was renamed to: the SMDs, ``$texturegroup`` and ``$texrendermode``
    all follow, as the texture's name in a recompiled model)."""
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    now = [edits.renamed.get(t.name, t.name) if edits is not None else t.name for t in gs.textures]
    files = [job.output.name(_BMP.sub("", n) or f"texture{i}", ".bmp") for i, n in enumerate(now)]
    wanted = [n if n == t.name or _BMP.search(n) else f"{n}.bmp" for n, t in zip(now, gs.textures, strict=True)]
    renamed = [n for n, f in zip(wanted, files, strict=True) if n != f]
    if renamed:
        job.result.warnings.add(f"textures renamed to safe, unique BMP file names: {', '.join(renamed[:5])}")
    if gs.body_parts and not gs.textures:
        job.result.warnings.add(
            f"the model's textures were not found: texture coordinates assume {FALLBACK_SIZE}² texels"
        )
    return files


def _edited_skins(gs: GsFile, job: DecompileJob) -> np.ndarray | None:
    """An export's skin families (``SourceEdits.skins``, by material name) as the file's texture indices: each
    name a texture of the model by its name or the Blender name it was renamed to. A name that is no texture of
    the model (GoldSrc embeds every texture a family names) keeps the file's entry, with a warning."""
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    if edits is None or edits.skins is None:
        return None
    index = {t.name: i for i, t in enumerate(gs.textures)}
    index.update({new: index[old] for old, new in edits.renamed.items() if old in index})
    width = gs.skins.shape[1] if gs.skins.ndim == 2 else 0
    table = np.array(
        [[index.get(n, -1) for n in [*row, *[""] * width][:width]] for row in edits.skins], np.int64
    ).reshape(-1, width)
    file_rows = gs.skins[np.minimum(np.arange(len(table)), len(gs.skins) - 1)] if len(gs.skins) else table
    unknown = table < 0
    if unknown.any():
        names = sorted({edits.skins[f][c] for f, c in zip(*np.nonzero(unknown), strict=True)})
        job.result.warnings.add(
            f"skin families name materials that are no texture of the model, kept as the file's: {', '.join(names[:5])}"
        )
        table = np.where(unknown, file_rows, table)
    return table


def _skeleton(gs: GsFile, job: DecompileJob, skeleton: SmdSkeleton, deleted: list[str]) -> EditedSkeleton:
    """The file's bones, rest and model-space rest; in an export, with the bones moved or made in Blender, and
    without those ``deleted`` there."""
    world = bone_world(gs)
    rest = gs.bones["value"].astype(np.float64)[None]  # (1, bones, 6): a reference SMD's one frame
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    if edits is None:
        return EditedSkeleton(skeleton, world, rest, 0)
    edited = edited_skeleton(skeleton, world, rest, edits.rig)
    if edited.new:
        job.result.warnings.add(
            f"{edited.new} bones made in Blender are in the SMDs (at their rest in the file's sequences), e.g."
            f" '{edited.skeleton.names[-edited.new]}'"
        )
    edited = without_deleted(edited, deleted)
    if edited.deleted is not None:
        job.result.warnings.add(deleted_note(edited.deleted))
    return edited


def _references(
    gs: GsFile, job: DecompileJob, bones: EditedSkeleton, texture_files: list[str], part_names: list[str]
) -> list[tuple[str, list[str | None]]]:
    """One reference SMD per body-part option (blank ones stay blank): per part, its name and options' stems."""
    warnings, out = job.result.warnings, job.output
    world = bone_world(gs)  # (the file's meshes sit on the file's bones)
    skeleton, rest = bones.skeleton, bones.rest
    pose = (nodes_text(skeleton), *skeleton_texts([rest])[0])  # (the same in every one: formatted once)
    materials, sizes = _columns(gs, texture_files)
    body_parts = []
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    for b, part in enumerate(gs.body_parts):
        options: list[str | None] = []
        count = len(part.models)
        if edits is not None and b < len(edits.options):
            count = max(count, len(edits.options[b]))
        for m in range(count):
            model = part.models[m] if m < len(part.models) else None
            empty = model is None or (len(model.vertices) == 0 and not any(len(mesh.corners) for mesh in model.meshes))
            if edits is not None:  # an export: Blender's object for the option, if it has one
                entry = edits.meshes.get((b, m, 0))
                if entry is None:
                    options.append(None)
                    continue
                original = None if empty else model_triangles(gs, model, world, materials, sizes)[0]
                triangles = _edited(gs, job, entry, bones, texture_files, original)
                name = source_stem(model.name) if model is not None else edits.options[b][m]
                relative = out.name(name or f"{part.name}_{m}", ".smd")
                with out.open(relative) as stream:
                    stats = _write_reference(stream, pose, triangles)
                _non_finite(warnings, relative, stats.non_finite)
                options.append(relative[: -len(".smd")])
                continue
            if empty:
                options.append(None)
                continue
            relative = out.name(source_stem(model.name) or f"{part.name}_{m}", ".smd")
            out.check(CORNER_BYTES * sum(len(mesh.corners) for mesh in model.meshes), out.root / relative)
            triangles, dropped = model_triangles(gs, model, world, materials, sizes)
            if dropped:
                warnings.add(f"'{model.name}': {dropped} degenerate triangles (a repeated vertex) were left out")
            with out.open(relative) as stream:
                stats = _write_reference(stream, pose, triangles)
            _non_finite(warnings, relative, stats.non_finite)
            options.append(relative[: -len(".smd")])
        body_parts.append((part_names[b], options))
    return body_parts


def _write_reference(stream: BinaryIO, pose: tuple[bytes, bytes, SmdStats], triangles: SmdTriangles) -> SmdStats:
    """``write_smd``'s bytes for a reference SMD whose ``nodes`` and ``skeleton`` sections (``pose``: the rest
    pose's, with its stats) were formatted once for them all."""
    nodes, skeleton, rest = pose
    stats = SmdStats(rest.non_finite, rest.rows)
    stream.write(nodes)
    stream.write(skeleton)
    write_triangles(stream, triangles, stats)
    return stats


def _animations(gs: GsFile, job: DecompileJob, bones: EditedSkeleton, labels: list[str]) -> list[SequenceFiles]:
    """One animation SMD per blend of every sequence; a sequence that cannot be decoded is a warning (and a
    comment in the QC). Sequences are decoded a batch at a time and their text formatted together
    (``skeleton_texts``), then written in order. In an export, the blends the user changed in Blender are
    Blender's (``_edited_blends``)."""
    sequences: list[SequenceFiles] = []
    walked = WalkAllowance()  # the data walked by leaping, over every sequence (as the import counts it)
    skeleton = bones.skeleton
    replaced = _edited_blends(gs, job, bones)
    batch: list[tuple[int, list[np.ndarray] | None, list[int]]] = []
    lines = 0
    decoded = _decoded(gs, walked, replaced) if job.options.animations else None
    for s, seq in enumerate(gs.sequences):
        frames, held = None, []
        if decoded is not None:
            result = next(decoded)
            if isinstance(result, FormatError):
                _write_sequences(gs, job, skeleton, labels, batch, sequences)
                batch, lines = [], 0
                job.result.warnings.add(f"sequence '{labels[s]}' was not written: {result.message}")
                sequences.append(SequenceFiles(seq, labels[s], [], result.message))
                continue
            frames, held = result
            frames = [_with_added(blend, bones) for blend in frames]
            if bones.deleted is not None:
                frames = [fold_frames(blend, bones.deleted) for blend in frames]
            count = sum(blend.shape[0] * blend.shape[1] for blend in frames)  # bone lines
            if count >= BATCH_LINES:  # alone, streamed as it is formatted (its text is never whole)
                _write_sequences(gs, job, skeleton, labels, batch, sequences)
                _write_sequences(gs, job, skeleton, labels, [(s, frames, held)], sequences, streamed=True)
                batch, lines = [], 0
                continue
            lines += count
        batch.append((s, frames, held))
        if lines >= BATCH_LINES:
            _write_sequences(gs, job, skeleton, labels, batch, sequences)
            batch, lines = [], 0
    _write_sequences(gs, job, skeleton, labels, batch, sequences)
    return sequences


def _decoded(
    gs: GsFile, walked: WalkAllowance, replaced: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]]
) -> Iterator[tuple[list[np.ndarray], list[int]] | FormatError]:
    """Every sequence's blends (``motion.batch_frames``) in order, decoded a batch of about ``BATCH_LINES`` bone
    lines at a time (so what is held stays bounded; a decoding error is its sequence's alone)."""
    indices: list[int] = []
    lines = 0
    for s, seq in enumerate(gs.sequences):
        indices.append(s)
        lines += max(seq.numframes, 1) * max(seq.numblends, 1) * len(gs.bones)
        if lines >= BATCH_LINES:
            yield from batch_frames(gs, indices, walked, replaced)
            indices, lines = [], 0
    if indices:
        yield from batch_frames(gs, indices, walked, replaced)


def _write_sequences(
    gs: GsFile,
    job: DecompileJob,
    skeleton: SmdSkeleton,
    labels: list[str],
    batch: list[tuple[int, list[np.ndarray] | None, list[int]]],
    sequences: list[SequenceFiles],
    streamed: bool = False,
) -> None:
    """The SMDs of a batch of decoded sequences (``frames`` None: animations are off, the names alone), their
    text formatted together, or (``streamed``) each written a block at a time."""
    warnings, out = job.result.warnings, job.output
    blocks = [] if streamed else [blend for _, frames, _ in batch if frames is not None for blend in frames]
    texts = iter(skeleton_texts(blocks))
    nodes = nodes_text(skeleton)  # (the same in every SMD)
    for s, frames, held in batch:
        seq, label = gs.sequences[s], labels[s]
        if held:
            names = ", ".join(gs.bone_names[b] for b in held[:HELD_NAMES]) + (" …" if len(held) > HELD_NAMES else "")
            warnings.add(
                f"sequence '{label}': channels of {len(held)} bones ({names}) point past the end of their "
                "file; written at the bones' defaults"
            )
        blends = len(frames) if frames is not None else max(seq.numblends, 1)
        smds = []
        for blend in range(blends):
            relative = out.name((label or f"sequence{s}") + ("" if blends == 1 else f"_blend{blend + 1}"), ".smd")
            if frames is not None:
                with out.open(relative) as stream:
                    if streamed:
                        stats = write_smd(stream, skeleton, frames[blend])
                    else:
                        text, stats = next(texts)
                        stream.write(nodes)
                        stream.write(text)
                _non_finite(warnings, relative, stats.non_finite)
            smds.append(relative[: -len(".smd")])
        sequences.append(SequenceFiles(seq, label, smds))


def _with_added(frames: np.ndarray, bones: EditedSkeleton) -> np.ndarray:
    """A blend's frames with the bones made in Blender at their rest (a blend taken from Blender has them)."""
    bones = bones.whole
    missing = len(bones.skeleton.names) - frames.shape[1]
    if missing <= 0:
        return frames
    held = np.broadcast_to(bones.rest[0, -missing:], (len(frames), missing, 6))
    return np.concatenate([frames, held], axis=1)


def _edited_blends(
    gs: GsFile, job: DecompileJob, bones: EditedSkeleton
) -> dict[int, dict[int, tuple[np.ndarray, np.ndarray]]]:
    """Per sequence, per blend: Blender's frames of the imported animations the user changed (an export's)."""
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    if edits is None or not edits.edited or edits.rig is None:
        return {}
    available = offers(gs)
    names = [name for _, _, name in available]
    poses = edited_poses(edits.edited, names, edits.rig, bones.whole.world, bones.whole.skeleton)
    out: dict[int, dict[int, tuple[np.ndarray, np.ndarray]]] = {}
    for k, pose in poses.items():
        s, blend, _ = available[k]
        out.setdefault(s, {})[blend] = pose
    return out


def _new_sequences(gs: GsFile, job: DecompileJob, bones: EditedSkeleton, labels: list[str]) -> list[NewSequence]:
    """The actions made in Blender (an export's): one SMD each, every frame from the first key to the last, as
    Blender poses it (the engine's pose: the QC says ``rotate -90``, so the compiler turns nothing)."""
    edits = job.options.edits if isinstance(job.options.edits, SourceEdits) else None
    if edits is None or not edits.actions or edits.rig is None or not job.options.animations:
        return []
    own = set(labels) | {name for _, _, name in offers(gs)}
    made = []
    skeleton, world = bones.skeleton, bones.world
    for k, action in enumerate(a for a in edits.actions if a.name not in own):
        positions, matrices = action_pose(action, edits.rig, world, skeleton)
        frames = np.concatenate([positions, matrix_to_euler(matrices)], axis=-1)
        frames[..., 3:] = np.remainder(frames[..., 3:] + np.pi, 2 * np.pi) - np.pi
        relative = job.output.name(action.name or f"action{k}", ".smd")
        with job.output.open(relative) as stream:
            stats = write_smd(stream, skeleton, frames)
        _non_finite(job.result.warnings, relative, stats.non_finite)
        made.append(NewSequence(action.name, relative[: -len(".smd")], edits.rig.fps))
    return made


def _check_animation_budget(gs: GsFile, path: str) -> None:
    """Every blend of every sequence is decoded and written: their frames × bones against the import's budget for
    a model's animations (sequences may share one stream of values, so each alone passing proves nothing)."""
    budget = current_budget()
    data_bytes = len(gs.data) + sum(len(data) for data, _ in gs.group_data.values())
    work = sum(max(s.numframes, 0) * max(s.numblends, 1) for s in gs.sequences) * len(gs.bones)
    budget.check(path, "frames × bones over all animations", work, budget.bone_frames(data_bytes))


def _edited(gs, job, entry, bones, texture_files, original):
    """Blender's object of one option: materials by the texture files the QC names, bones by the file's names (a
    deleted bone's weight on its nearest surviving ancestor)."""
    edits = job.options.edits
    obj, names = entry
    file_of = {t.name: f for t, f in zip(gs.textures, texture_files, strict=True)}
    sizes = {f: (t.width, t.height) for t, f in zip(gs.textures, texture_files, strict=True)}
    obj = remap_bones(obj, edits.bones, list(bones.whole.skeleton.names))
    if bones.deleted is not None:
        job.result.warnings.extend(moved_note([obj], bones.deleted))
        obj = fold_skin(obj, bones.deleted)
    texture = {new: old for old, new in edits.renamed.items()}  # a renamed material: its texture's BMP, renamed too
    return edited_triangles(obj, [file_of.get(texture.get(n, n), n) for n in names], sizes, original)


def source_stem(name: str) -> str:
    """A model's SMD stem from the name it stores (its source file, often a path): the last step without ``.smd``,
    other dots as ``_`` (studiomdl adds ``.smd`` to whatever it is given; other tools add it only without one)."""
    stem = re.split(r"[/\\]", name)[-1]
    return re.sub(r"\.smd$", "", stem, flags=re.IGNORECASE).replace(".", "_")


def _columns(gs: GsFile, texture_files: list[str]) -> tuple[list[str], np.ndarray]:
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
