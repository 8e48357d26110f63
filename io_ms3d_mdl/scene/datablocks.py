"""What an import asks Blender to make, counted against the datablock budgets (``budget.py``). No ``bpy``.

The readers' budgets bound bytes, vertices and frames; none of them bounds how many objects, shape keys, drivers,
actions or properties those become, and Blender's cost is per item (a one-vertex shape key costs as much to make
as any). One check over the finished scene description, before Blender makes anything.
"""

from __future__ import annotations

import os

from ..budget import current_budget
from .types import CollectionData, SceneData


def check_datablocks(scene: SceneData, path: str | os.PathLike[str] | None) -> None:
    """Raise :class:`~io_ms3d_mdl.errors.BudgetExceeded` when ``scene`` asks for more than the budgets allow."""
    budget = current_budget()
    collections = _collections(scene.collections)
    objects = len(scene.objects) + len(scene.empties) + len(collections)
    budget.check(path, "objects, empties and collections", objects, budget.objects)
    keys = sum(len(o.mesh.shape_keys) for o in scene.objects)
    budget.check(path, "shape keys over all objects", keys, budget.shape_keys)
    drivers = sum(len(o.drivers) for o in scene.objects)
    budget.check(path, "drivers over all objects", drivers, budget.drivers)
    budget.check(path, "actions", len(scene.actions), budget.actions)
    budget.check(path, "materials", len(scene.materials), budget.materials)
    props = (
        len(scene.props)
        + sum(len(o.props) + len(o.controls) + len(o.drivers) for o in scene.objects)
        + sum(len(e.props) for e in scene.empties)
        + sum(len(c.props) for c in collections)
        + sum(len(m.props) for m in scene.materials)
        + sum(len(a.props) for a in scene.actions)
        + (sum(len(b.props) for b in scene.skeleton.bones) if scene.skeleton else 0)
    )
    # (not counted: the fingerprint the builder keeps on each action, one an action, bounded by the action budget)
    budget.check(path, "custom properties", props, budget.custom_properties)


def _collections(roots: list[CollectionData]) -> list[CollectionData]:
    out, todo = [], list(roots)
    while todo:
        coll = todo.pop()
        out.append(coll)
        todo.extend(coll.children)
    return out
