"""The names a user sees in the outliner, settled once for the whole import. No ``bpy``.

Blender keeps one namespace per datablock kind for the whole file, so two things of one import asking for the same
name get Blender's ``.001`` on the second: an option named like its model (``metal_box`` › ``body`` ›
``metal_box.001``), two attachments called ``flag``, a mesh and the armature both named after a MilkShape file.
Here every collection and every object (meshes, empties, the armature) gets a name no other one of the import
asks for, within Blender's 63 bytes, so a fresh import never needs a suffix: a repeat is told apart by its place
(``hat: blank 0``, ``civilian attachments``) or, only when nothing else differs, numbered ``flag (2)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from .bones import NAME_BYTES, shorten
from .types import CollectionData, SceneData


class NameBook:
    """Hands out names unique within one datablock kind: the first to ask keeps its name, repeats are numbered."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.used = set(taken)
        self.last: dict[str, int] = {}  # base -> last number tried, so many repeats of one name stay linear

    def take(self, name: str, fallback: str = "object") -> str:
        base = shorten(name).strip() or fallback
        candidate, n = base, self.last.get(base, 1)
        while candidate in self.used:
            n += 1
            suffix = f" ({n})"
            candidate = shorten(base, NAME_BYTES - len(suffix)) + suffix
        self.last[base] = n
        self.used.add(candidate)
        return candidate


def settle_names(scene: SceneData) -> None:
    """Give every collection and object of ``scene`` its final, import-unique name (see the module docstring).

    The model's own collection keeps the scene's name; the armature object keeps it too unless an object of the
    file asks for the same name first, and then reads ``<model> armature``."""
    collections = NameBook()
    scene.name = collections.take(scene.name, "model")
    for data in _walk(scene.collections):
        data.name = collections.take(data.name, "collection")
    groups: dict[str, str] = {}
    for empty in scene.empties:
        if empty.collection and empty.collection not in groups:
            groups[empty.collection] = collections.take(f"{scene.name} {empty.collection}")
        empty.collection = groups.get(empty.collection, "")

    objects = NameBook()
    for obj in scene.objects:
        obj.name = objects.take(obj.name)
    for empty in scene.empties:
        empty.name = objects.take(empty.name, "empty")
    if scene.skeleton is not None:
        wanted = scene.skeleton.name or scene.name
        asked = wanted in objects.used
        scene.skeleton.name = objects.take(f"{wanted} armature" if asked else wanted, "armature")


def _walk(collections: list[CollectionData]) -> Iterator[CollectionData]:
    """Parents before their children, in the order they are built."""
    for data in collections:
        yield data
        yield from _walk(data.children)
