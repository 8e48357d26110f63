"""Which bones of an imported armature are the ones the import made, whatever the user renamed them to since: an
export writes a renamed bone as the file's bone under its new name, not as a deleted bone and a new one.

The import stamps each bone with its index in the file (``armature.BONE_INDEX``, a custom property Blender keeps
across renames, and copies to a duplicate: a duplicate's original is the one still named as at import). A model
imported before the stamp existed is matched by rest instead: an import-time name no bone has any more goes to the
one unclaimed bone at that name's rest (its parent is checked by the export, which knows the file's hierarchy).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import bpy
import numpy as np

from .armature import BONE_INDEX, REST_BONES, imported_rest


@dataclass
class BoneIdentities:
    made: dict[str, str] = field(default_factory=dict)  # each bone the import made: its name now -> its name then
    guessed: set[str] = field(default_factory=set)  # names now of the bones matched by rest (an unstamped import)


def bone_identities(armature: bpy.types.Armature, tolerance: float) -> BoneIdentities:
    """``tolerance``: how far (armature space) a rest may be from the import's and still be the same bone's."""
    names = [str(n) for n in armature.get(REST_BONES, [])]
    out = BoneIdentities()
    stamped: dict[int, list[str]] = {}
    for bone in armature.bones:
        k = bone.get(BONE_INDEX)
        if isinstance(k, int) and 0 <= k < len(names):
            stamped.setdefault(k, []).append(bone.name)
    for k, owners in stamped.items():
        if names[k] in owners:
            out.made[names[k]] = names[k]
        elif len(owners) == 1:  # (several, none under the import's name: duplicates of a renamed bone, ambiguous)
            out.made[owners[0]] = names[k]
    claimed = set(out.made.values())
    for bone in armature.bones:  # the bones not stamped: by their names
        if bone.name not in out.made and bone.name in names and bone.name not in claimed:
            out.made[bone.name] = bone.name
            claimed.add(bone.name)
    if stamped:
        return out
    rest = imported_rest(armature)
    free = {b.name: np.array(b.matrix_local, np.float64) for b in armature.bones if b.name not in out.made}
    for name in names:
        if name in claimed or name not in rest:
            continue
        near = [now for now, m in free.items() if np.abs(m - rest[name]).max() <= tolerance]
        if len(near) == 1:
            out.made[near[0]] = name
            out.guessed.add(near[0])
            del free[near[0]]
    return out
