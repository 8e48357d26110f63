"""Blender operators called without the two view-layer updates ``bpy.ops`` wraps around every call.

Those updates evaluate everything the import has made so far, again at every call: the armature's edit-mode round
trip and one vertex-group conversion per bone made civilian's import 2.2× slower (27 → 61 ms). The import's own
operator updates the view layer once when it ends, and nothing the import does in between reads evaluated data.

Two ways, chosen by what Blender offers (a feature test, never a version number):

- through Blender 5.0, ``_bpy.ops.call`` runs an operator without the updates;
- from 5.1 on that internal call is gone (``bpy.ops`` is C and always updates the context's view layer), so the
  operator runs with a private, empty scene as its context: the updates then evaluate only what that scene holds
  (at most the one object the operator works on). One such scene serves a whole import (:func:`staging`: making
  and removing one costs about 0.3 ms in a full file, and an import opens a scope per rigged object); it is
  removed when the import ends, whatever happens.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import bpy

try:
    from _bpy import ops as _ops

    _call = _ops.call
except (ImportError, AttributeError):  # Blender 5.1 and later
    _call = None

STAGING = ".io_ms3d_mdl staging"  # the private scene's name (a leading dot hides it from Blender's scene lists)
_shared: list[bpy.types.Scene | None] = []  # while :func:`staging` runs: its scene, made when first needed


def run_operator(idname: str, **props: object) -> bool:
    """Run ``idname`` ("module.name") in the current context and say whether it finished. A failed poll raises
    ``RuntimeError``, as through ``bpy.ops``. Call it inside :func:`operator_scope` to skip the updates."""
    if _call is None:
        module, name = idname.split(".")
        return "FINISHED" in getattr(getattr(bpy.ops, module), name)(**props)
    return "FINISHED" in _call(idname, props)


@contextmanager
def staging() -> Iterator[None]:
    """Every :func:`operator_scope` inside the block shares one staging scene (where one is needed at all)."""
    if _call is not None or _shared:
        yield
        return
    _shared.append(None)
    try:
        yield
    finally:
        scene = _shared.pop()
        if scene is not None:
            bpy.data.scenes.remove(scene)


@contextmanager
def operator_scope(obj: bpy.types.Object, active: bool = False) -> Iterator[None]:
    """A context in which :func:`run_operator` works on ``obj`` without evaluating the rest of the file.

    ``active``: the operator needs ``obj`` as its view layer's active object (mode switches act on that, not on
    the context's ``object``); otherwise ``obj`` is only the context's object, and evaluated by no update."""
    if _call is not None:
        with _as_active(bpy.context.view_layer, obj, active), bpy.context.temp_override(active_object=obj, object=obj):
            yield
        return
    with _staging_scene() as scene:
        layer = scene.view_layers[0]
        if active:
            scene.collection.objects.link(obj)
        try:
            layer.objects.active = obj if active else None
            with bpy.context.temp_override(scene=scene, view_layer=layer, active_object=obj, object=obj):
                yield
        finally:
            if active and obj.name in scene.collection.objects:
                scene.collection.objects.unlink(obj)


@contextmanager
def _staging_scene() -> Iterator[bpy.types.Scene]:
    """The import's staging scene (made on first use), or, outside :func:`staging`, one for this block alone."""
    if _shared:
        if _shared[-1] is None:
            _shared[-1] = bpy.data.scenes.new(STAGING)
        yield _shared[-1]
        return
    scene = bpy.data.scenes.new(STAGING)
    try:
        yield scene
    finally:
        bpy.data.scenes.remove(scene)  # unlinks what it still holds


@contextmanager
def _as_active(layer: bpy.types.ViewLayer, obj: bpy.types.Object, active: bool) -> Iterator[None]:
    """``obj`` as ``layer``'s active object for the block, the previous one restored after (a script may import
    under a context naming another)."""
    if not active:
        yield
        return
    previous = layer.objects.active
    layer.objects.active = obj
    try:
        yield
    finally:
        layer.objects.active = previous
