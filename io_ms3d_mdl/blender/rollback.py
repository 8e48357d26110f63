"""All-or-nothing imports: whatever a failed build created is removed, so the file is exactly as before."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import bpy


def id_collection_names() -> list[str]:
    """Names of every ``bpy.data`` collection of datablocks (objects, meshes, images, actions, ...), on any version."""
    # Every collection property of BlendData holds IDs.
    return [p.identifier for p in bpy.types.BlendData.bl_rna.properties if p.type == "COLLECTION"]


def id_collections() -> list[bpy.types.bpy_prop_collection]:
    return [getattr(bpy.data, name) for name in id_collection_names()]


def _snapshot() -> set[int]:
    return {block.as_pointer() for coll in id_collections() for block in coll}


@contextmanager
def remove_created_on_error() -> Iterator[None]:
    """Run a build; if it raises, delete every datablock created since it started, then re-raise."""
    before = _snapshot()
    try:
        yield
    except BaseException:
        created = [block for coll in id_collections() for block in coll if block.as_pointer() not in before]
        if created:
            bpy.data.batch_remove(created)
        raise
