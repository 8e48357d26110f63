"""Names from files made into names Blender keeps exactly. No ``bpy``.

Every name a file gives that becomes a property name, a shape key, a bone, a vertex group or a key of any other
Blender collection goes through :func:`shorten` and :func:`unique_names`: Blender stores them in 64-byte buffers,
and a longer one is cut (or, for a custom property, refused with a ``KeyError`` that used to lose the whole
model). The file's full name is kept in a value next to it. Datablock names (objects, meshes, materials, actions)
Blender shortens and numbers itself, on a character boundary, and their full names are kept in properties.
"""

from __future__ import annotations

from collections.abc import Iterable

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
