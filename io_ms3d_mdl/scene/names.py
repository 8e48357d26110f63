"""Names from files made into names Blender keeps exactly. No ``bpy``.

Every name a file gives that becomes a property name, a shape key, a bone, a vertex group or a key of any other
Blender collection goes through :func:`shorten` and :func:`unique_names`: Blender stores them in 64-byte buffers,
and a longer one is cut (or, for a custom property, refused with a ``KeyError`` that used to lose the whole
model). The file's full name is kept in a value next to it. Datablock names (objects, meshes, materials, actions)
Blender shortens and numbers itself, on a character boundary, and their full names are kept in properties; the
ones a user reads in the outliner (collections and objects) are settled for the whole import by
:func:`settle_names`, so that Blender never has to number them on a fresh import.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator

from .types import CollectionData, Props, SceneData

# Blender keeps bone, vertex group, shape key and custom property names in 64-byte buffers (63 UTF-8 bytes and a
# zero) on every version; longer names are cut, sometimes mid-character, and then no longer match what we asked for.
NAME_BYTES = 63


def shorten(name: str, limit: int = NAME_BYTES) -> str:
    """``name`` cut to at most ``limit`` UTF-8 bytes on a character boundary, so Blender stores it unchanged
    (zero characters, which end a C string, are dropped; unencodable characters become ``?``)."""
    raw = name.replace("\0", "").encode("utf-8", "replace")
    return raw[:limit].decode("utf-8", "ignore")


def unique_names(
    names: list[str], fallback: str = "joint", taken: Iterable[str] = (), limit: int = NAME_BYTES
) -> list[str]:
    """Names Blender keeps exactly: at most ``limit`` UTF-8 bytes, unique (also against ``taken``), repeats
    numbered like Blender's own ``.001`` with the base shortened so the suffix still fits. Empty names become
    ``fallback`` plus their index."""
    used = set(taken)
    counters: dict[str, int] = {}  # base -> last suffix tried, so many repeats of one name stay linear
    out = []
    for i, name in enumerate(names):
        base = shorten(name, limit) or shorten(f"{fallback}{i}", limit)
        candidate, n = base, counters.get(base, 0)
        while candidate in used:
            n += 1
            suffix = f".{n:03d}"
            candidate = shorten(base, limit - len(suffix)) + suffix
        counters[base] = n
        used.add(candidate)
        out.append(candidate)
    return out


def original_name_props(key: str, original: str, name: str) -> dict[str, str]:
    """``{key: original}`` when Blender gets a different name than the file's (shortened, numbered), else ``{}``."""
    return {key: original} if original and original != name else {}


PROPERTY_NAMES = "source_property_names"  # on a datablock whose file-named properties had to be renamed


def fit_property_names(scene: SceneData) -> None:
    """Custom property names everywhere in ``scene`` within Blender's 63 bytes and unique on their datablock
    (names the file chose, like a ``.phy``'s keys, can be any length); the file's names of renamed ones are
    listed under :data:`PROPERTY_NAMES`."""
    for props in _all_props(scene):
        fit_props(props)


def fit_props(props: Props) -> None:
    """:func:`fit_property_names` for one datablock's properties, in place."""
    long = [key for key in props if _too_long(key)]
    if not long:
        return
    short = unique_names(long, "property", taken=[k for k in props if not _too_long(k)] + [PROPERTY_NAMES])
    renamed = dict(zip(long, short, strict=True))
    items = [(renamed.get(key, key), value) for key, value in props.items()]
    props.clear()
    props.update(items)
    props[PROPERTY_NAMES] = [{"name": s, "source_name": n} for n, s in renamed.items()]


def _too_long(name: str) -> bool:
    return "\0" in name or len(name.encode("utf-8", "replace")) > NAME_BYTES


def _all_props(scene: SceneData) -> Iterable[Props]:
    yield scene.props
    for obj in scene.objects:
        yield obj.props
    for empty in scene.empties:
        yield empty.props
    for material in scene.materials:
        yield material.props
    for action in scene.actions:
        yield action.props
    if scene.skeleton is not None:
        for bone in scene.skeleton.bones:
            yield bone.props
    todo: list[CollectionData] = list(scene.collections)
    while todo:
        coll = todo.pop()
        yield coll.props
        todo.extend(coll.children)


# --- the names a user sees in the outliner ---------------------------------------------------------------------
#
# Blender keeps one namespace per datablock kind for the whole file, so two things of one import asking for the
# same name get Blender's ``.001`` on the second: an option named like its model (``metal_box`` › ``body`` ›
# ``metal_box.001``), two attachments called ``flag``, a mesh and the armature both named after a MilkShape file.
# :func:`settle_names` gives every collection and every object (meshes, empties, the armature) a name no other one
# of the import asks for, within Blender's 63 bytes, so a fresh import never needs a suffix: a repeat is told apart
# by its place (``hat: blank 0``, ``civilian attachments``) or, only when nothing else differs, numbered
# ``flag (2)``.


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


def option_name(part: str, model: str, index: int) -> str:
    """A body part's choice as the outliner shows it: ``body: metal_box`` (a model is often named like its part or
    its file, so the part says which choice this is), or ``hat: blank 0`` for an empty one. ``model`` is the file's
    name for it, extension and all (Source ``.smd``, GoldSrc's ``blank``)."""
    model = os.path.splitext(model)[0]
    return f"{part}: {model}" if model and model.lower() != "blank" else f"{part}: blank {index}"


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
