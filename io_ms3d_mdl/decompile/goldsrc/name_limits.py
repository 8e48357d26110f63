"""The names an export brings from Blender into GoldSrc's fixed-size name fields. studiomdl copies a name into its
field with ``strncpy`` (``strcpyn`` in the SDK's ``studiomdl.c``): a name as long as the field or longer loses its
end and its terminating NUL, and the engine then reads on into the next field. So an export refuses such a name and
says which one, before anything is written; the file's own names always fit (they come from those fields).
"""

from __future__ import annotations

from ...formats.smd.writer import STORED
from ...scene.ms3d.export import ExportError
from ..source.edits import SourceEdits

# kind -> (the compiled field, its size in bytes)
FIELDS = {
    "bone": ("mstudiobone_t.name", 32),
    "sequence": ("mstudioseqdesc_t.label", 32),
    "material": ("mstudiotexture_t.name", 64),
    "body-part option": ("mstudiomodel_t.name", 64),
}


def check_name_lengths(edits: SourceEdits | None, bones: list[str], textures: list[str]) -> None:
    """``bones``: the bones renamed or made in Blender, as the SMDs name them; ``textures``: the BMP names the SMDs
    give the file's textures renamed there. The rest comes from ``edits``: new actions, the meshes' materials, the
    body-part options (the file's own names among them fit)."""
    if edits is None:
        return
    names = [("bone", n) for n in bones]
    names += [("sequence", a.name) for a in edits.actions]  # (the new ones: the file's keep their labels)
    names += [("material", n) for n in textures]
    names += [("material", n) for _, slots in edits.meshes.values() for n in slots]
    names += [("body-part option", n) for part in edits.options for n in part]
    for kind, name in names:
        size = len(name.encode(*STORED))
        field, limit = FIELDS[kind]
        if size >= limit:
            raise ExportError(
                f"{kind} '{name}' is {size} bytes long; GoldSrc holds at most {limit - 1} ({field} is {limit} bytes,"
                " its end a NUL): rename it in Blender"
            )
