"""Datablocks an import asks Blender for are budgeted: objects, shape keys, drivers, actions, custom properties
(datablocks.py), each refused with the budget named, before Blender makes anything."""

from __future__ import annotations

import numpy as np
import pytest

from io_ms3d_mdl.budget import Budget, using_budget
from io_ms3d_mdl.errors import BudgetExceeded
from io_ms3d_mdl.scene.datablocks import check_datablocks
from io_ms3d_mdl.scene.types import ActionData, CollectionData, EmptyData, MeshData, ObjectData, SceneData

SCALE = 0.001  # the Work Limit: budgets a thousandth of their size, so small scenes reach them


def mesh() -> MeshData:
    return MeshData("m", np.zeros((3, 3), np.float32), np.array([[0, 1, 2]], np.int32))


def over(kind: str, budget: Budget) -> SceneData:
    """A scene one item over ``kind``'s budget."""
    scene = SceneData("s")
    if kind == "objects":
        scene.empties = [EmptyData(f"e{i}", np.eye(4)) for i in range(budget.objects)]
        scene.collections = [CollectionData("c")]
    elif kind == "shape keys":
        scene.objects = [ObjectData("o", mesh())]
        scene.objects[0].mesh.shape_keys = [
            (f"k{i}", np.zeros((3, 3), np.float32)) for i in range(budget.shape_keys + 1)
        ]
    elif kind == "drivers":
        scene.objects = [ObjectData("o", mesh(), drivers=[("k", "c0", {})] * (budget.drivers + 1))]
    elif kind == "actions":
        scene.actions = [ActionData(f"a{i}", [], (0.0, 1.0)) for i in range(budget.actions + 1)]
    else:
        scene.objects = [ObjectData("o", mesh(), props={f"p{i}": i for i in range(budget.custom_properties + 1)})]
    return scene


@pytest.mark.parametrize(
    ("kind", "named"),
    [
        ("objects", "objects, empties and collections"),
        ("shape keys", "shape keys over all objects"),
        ("drivers", "drivers over all objects"),
        ("actions", "actions"),
        ("properties", "custom properties"),
    ],
)
def test_each_kind_of_datablock_is_refused_past_its_budget(kind, named):
    budget = Budget(SCALE)
    with using_budget(budget):
        with pytest.raises(BudgetExceeded, match=f"{named} of .* exceeds the work budget"):
            check_datablocks(over(kind, budget), "m.mdl")
        check_datablocks(SceneData("s", objects=[ObjectData("o", mesh())]), "m.mdl")  # within every budget


def test_chained_flex_rules_are_refused_past_the_driver_budget(tmp_path):
    """Each chained rule is a property with a driver: past the budget the import stops with it named."""
    from test_budget_worst_cases import chained_rules

    from io_ms3d_mdl.scene.load import load_source
    from io_ms3d_mdl.scene.source.convert import SourceOptions

    path, _options, _units = chained_rules(100)(tmp_path)
    with pytest.raises(BudgetExceeded, match="drivers over all objects"):
        load_source(str(path), SourceOptions(work_limit=50 / Budget().drivers))
    (obj,) = load_source(str(path)).objects
    assert len(obj.drivers) == 101
