"""Format-independent import driver: read → convert → build, one file at a time, each all-or-nothing.

A file that fails leaves nothing behind; the other files still import. A :class:`FormatError` becomes its own
message; any other exception is a bug: after the rollback it becomes an "internal error" message for that file
(asking for a report) and its traceback goes to the console, so one bad file never stops the rest.
"""

from __future__ import annotations

import os
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import bpy

from ..access import clear_cache
from ..errors import FormatError
from ..scene.types import SceneData
from .operator_call import staging
from .rollback import remove_created_on_error
from .scene_builder import build_scene


@dataclass
class ImportResult:
    path: str
    error: str | None = None
    warnings: list[str] = field(default_factory=list)
    objects: list[str] = field(default_factory=list)
    collection: str | None = None
    vertices: int = 0
    triangles: int = 0
    materials: int = 0
    missing_materials: int = 0  # of ``materials``: placeholders for materials the game files did not have
    bones: int = 0
    actions: int = 0
    degenerate_triangles: int = 0  # skipped for repeating a vertex (reported, not warned about)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None

    def summary(self) -> str:
        name = os.path.basename(self.path)
        if not self.ok:
            return f"Import failed: {self.error}"
        text = (
            f"Imported {name}: {_plural(len(self.objects), 'object')}, {_plural(self.vertices, 'vertex', 'vertices')}, "
            f"{_plural(self.triangles, 'triangle')}"
            + (f" ({self.degenerate_triangles:,} degenerate skipped)" if self.degenerate_triangles else "")
            + f", {_plural(self.materials - self.missing_materials, 'material')}"
        )
        if self.missing_materials:
            text += f" (+{self.missing_materials:,} missing)"
        if self.bones:
            text += f", {_plural(self.bones, 'bone')}, {_plural(self.actions, 'action')}"
        if self.warnings:
            text += f" ({_plural(len(self.warnings), 'warning')})"
        return text


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def import_files(
    context: bpy.types.Context, paths: Sequence[str], to_scene: Callable[[str], SceneData]
) -> list[ImportResult]:
    _ensure_object_mode(context)
    clear_cache()
    results = []
    imported: list[bpy.types.Object] = []
    for path in paths:
        start = time.perf_counter()
        try:
            result, objects = _import_one(context, path, to_scene)
            imported.extend(objects)
        except FormatError as exc:
            result = ImportResult(path, exc.message)
        except Exception as exc:  # a bug, not a bad file: report it as this file's failure and go on
            traceback.print_exc()
            result = ImportResult(path, internal_error(path, exc))
        result.seconds = time.perf_counter() - start
        results.append(result)
    if imported:
        _select(context, imported)
    return results


def _import_one(
    context: bpy.types.Context, path: str, to_scene: Callable[[str], SceneData]
) -> tuple[ImportResult, list[bpy.types.Object]]:
    """Read, convert and build one file; whatever raises leaves no datablock behind."""
    scene = to_scene(path)
    result = ImportResult(path)
    with remove_created_on_error(), staging():
        collection, objects = build_scene(context, scene)
        result.collection = collection.name
        result.objects = [o.name for o in objects]
        result.vertices, result.triangles = scene.vertex_count, scene.triangle_count
        result.degenerate_triangles = scene.degenerate_triangles
        result.materials = len(scene.materials)
        result.missing_materials = sum(bool(m.props.get("source_missing")) for m in scene.materials)
        result.bones = len(scene.skeleton.bones) if scene.skeleton else 0
        result.actions = len(scene.actions)
        result.warnings = list(scene.warnings)
    return result, objects


MAX_DETAIL = 300  # characters of an unexpected exception's text kept in the message


def internal_error(path: str, exc: BaseException) -> str:
    """The user-facing message for an unexpected exception (the traceback itself goes to the console)."""
    detail = str(exc)
    if len(detail) > MAX_DETAIL:
        detail = detail[:MAX_DETAIL] + "…"
    name = os.path.basename(path)
    return f"internal error while importing {name}: {type(exc).__name__}: {detail}; please report it"


def _ensure_object_mode(context: bpy.types.Context) -> None:
    obj = context.view_layer.objects.active
    if obj is not None and obj.mode != "OBJECT" and bpy.ops.object.mode_set.poll():
        bpy.ops.object.mode_set(mode="OBJECT")


def _select(context: bpy.types.Context, objects: list[bpy.types.Object]) -> None:
    layer = context.view_layer
    for obj in layer.objects:
        obj.select_set(False)
    selected = []
    for obj in objects:
        try:
            obj.select_set(True, view_layer=layer)
        except RuntimeError:  # not in this view layer (e.g. its collection is excluded)
            continue
        selected.append(obj)
    if selected:
        layer.objects.active = selected[0]
