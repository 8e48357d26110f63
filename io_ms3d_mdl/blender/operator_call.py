"""Blender operators called as ``bpy.ops`` calls them, minus the two view-layer updates it wraps around every
call. Those updates were 85 % of an armature's edit-mode round trip (0.55 → 0.08 ms); the import's own operator
updates the view layer once when it ends, and nothing the import does in between reads evaluated data."""

from __future__ import annotations

import bpy

try:
    from _bpy import ops as _ops

    _call = _ops.call
except (ImportError, AttributeError):  # pragma: no cover - every Blender from 2.80 to 5.0 has it
    _call = None


def run_operator(idname: str, **props: object) -> bool:
    """Run ``idname`` ("module.name") in the current context and say whether it finished. A failed poll raises
    ``RuntimeError``, as through ``bpy.ops``, which is used should Blender ever drop its internal call."""
    if _call is None:  # pragma: no cover
        module, name = idname.split(".")
        return "FINISHED" in getattr(getattr(bpy.ops, module), name)(**props)
    return "FINISHED" in _call(idname, props)
