"""Bones the user renamed in Blender (``edits.SourceEdits.renamed_bones``): the file's bones, under their new names.

The file's names are replaced before anything is written, so every SMD's nodes and every QC line naming a bone
(they all take the name from the skeleton by index) agree with the Blender side, which already gives a renamed bone
its new name; names written from other text of the file (an included model's bones, the collision model's, a bone
follower's key value) go through ``RenamedBones.name``. A rename matched by rest alone (an older import) stands
only if the bone's parent is the file's; otherwise it is what it looks like, a deleted bone and a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...formats.qc.writer import qc_name
from ...scene.ms3d.export import ExportError
from .edits import SourceEdits


@dataclass
class RenamedBones:
    names: list[str]  # the file's bones as the export writes them
    renames: dict[str, str]  # file name -> new name
    deleted: list[str]  # the file's bones left out: ``edits.deleted``, and a guessed rename not confirmed
    _lower: dict[str, str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._lower = {old.lower(): new for old, new in self.renames.items()}

    def name(self, file_name: str) -> str:
        """A bone the file's text names (matched as studiomdl does, whatever the case), as it is written."""
        return self.renames.get(file_name, self._lower.get(file_name.lower(), file_name))


def rename_bones(names: list[str], parents: np.ndarray, edits: SourceEdits | None) -> RenamedBones:
    """The file's bone ``names`` (and ``parents``) with the export's renames; an ExportError when a new name is
    another bone's (studiomdl tells bones apart by their names, whatever the case)."""
    if edits is None or not edits.renamed_bones:
        return RenamedBones(list(names), {}, list(edits.deleted) if edits is not None else [])
    index = {n: i for i, n in enumerate(names)}
    renames = {old: new for old, new in edits.renamed_bones.items() if old in index}
    deleted = list(edits.deleted)
    rig = edits.rig
    rig_index = {n: i for i, n in enumerate(rig.names)} if rig is not None else {}
    for old in edits.guessed_bones:
        new = renames.get(old)
        if new is None:
            continue
        p = int(parents[index[old]])
        file_parent = renames.get(names[p], names[p]) if p >= 0 else None
        r = rig_index.get(new)
        q = int(rig.parents[r]) if r is not None else -1
        if file_parent != (rig.names[q] if q >= 0 else None):
            del renames[old]
            deleted.append(old)
    written = [renames.get(n, n) for n in names]
    _check_clashes(names, written, renames, deleted, rig.names if rig is not None else [])
    return RenamedBones(written, renames, deleted)


def _check_clashes(
    names: list[str], written: list[str], renames: dict[str, str], deleted: list[str], rig_names: list[str]
) -> None:
    """A new name that another bone (of the file, even one deleted in Blender, or one made there) has too, as the
    SMDs and QC write names: studiomdl tells bones apart by name whatever the case."""
    gone = set(deleted)
    bones = [
        (n, w, f"'{n}'" + (f" (renamed to '{w}')" if w != n else " (deleted in Blender)" if n in gone else ""))
        for n, w in zip(names, written, strict=True)
    ]
    file_bones = set(written)
    bones += [(None, n, f"'{n}' (made in Blender)") for n in rig_names if n not in file_bones]
    keys = [qc_name(w).lower() for _, w, _ in bones]
    for old, new in renames.items():
        key = qc_name(new).lower()
        for (name, _, label), k in zip(bones, keys, strict=True):
            if k == key and name != old:
                raise ExportError(
                    f"bone '{old}' renamed in Blender to '{new}': the model has another bone {label}, and studiomdl"
                    " tells bones apart by name whatever the case; rename one of them"
                )
