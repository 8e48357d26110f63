"""All-or-nothing imports: whatever a failed build created is removed (datablocks, and files it wrote, such as
PNG textures), so the Blender file and the disk are exactly as before."""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from contextlib import contextmanager

import bpy

_written: list[list[str]] = []  # per running build: files it created


def record_written_file(path: str) -> None:
    """Note a file the running build created (and only such a file), so a failure deletes it again."""
    if _written:
        _written[-1].append(path)


@functools.cache
def id_collection_names() -> tuple[str, ...]:
    """Names of every ``bpy.data`` collection of datablocks (objects, meshes, images, actions, ...), on any version
    (fixed for a Blender build: looked up once)."""
    # Every collection property of BlendData holds IDs.
    return tuple(p.identifier for p in bpy.types.BlendData.bl_rna.properties if p.type == "COLLECTION")


def id_collections() -> list[bpy.types.bpy_prop_collection]:
    return [getattr(bpy.data, name) for name in id_collection_names()]


def _snapshot() -> set[int]:
    return {block.as_pointer() for coll in id_collections() for block in coll}


@contextmanager
def remove_created_on_error() -> Iterator[None]:
    """Run a build; if it raises, delete every datablock created since it started, then re-raise."""
    before = _snapshot()
    _written.append([])
    try:
        yield
    except BaseException:
        created = [block for coll in id_collections() for block in coll if block.as_pointer() not in before]
        if created:
            bpy.data.batch_remove(created)
        for path in reversed(_written[-1]):  # files before the folders that hold them
            with contextlib.suppress(OSError):
                os.rmdir(path) if os.path.isdir(path) else os.remove(path)
        raise
    finally:
        _written.pop()
