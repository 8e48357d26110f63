"""Source flexes as shape keys and flex controllers as driven custom properties, without ``bpy`` (notes §1.8).

Each flex descriptor becomes one shape key per model, merged over the model's meshes: the fp16 deltas are added to
the LOD0 positions through the same compaction as the mesh. A stereo flex (``flexpair``) is shared out by each
vertex's side weight s: the descriptor gets ``(1 - s)`` of the delta and its pair gets ``s``, as the engine blends
them. Flex rules are reverse-polish programs over controllers; the simple ones (constants, controllers,
arithmetic, min/max) become driver expressions, the rest are listed as not driven.
"""

from __future__ import annotations

import numpy as np

from ..formats.source.model import MdlFile, MdlModel
from .types import ObjectData

CONST, FETCH1, FETCH2, ADD, SUB, MUL, DIV, NEG, MAX, MIN = 1, 2, 3, 4, 5, 6, 7, 8, 13, 14
BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}


def add_shape_keys(mdl: MdlFile, model: MdlModel, obj: ObjectData, used: np.ndarray, scale: float) -> None:
    """``used``: the VVD indices of ``obj``'s vertices (sorted, as compaction left them)."""
    deltas: dict[int, np.ndarray] = {}
    for mesh in model.meshes:
        base = model.vertex_index + mesh.vertex_offset
        for flex in mesh.flexes:
            where = np.searchsorted(used, base + flex.indices)
            inside = where < len(used)
            inside[inside] &= used[where[inside]] == base + flex.indices[inside]
            shares = [(flex.desc, 1.0 - flex.sides if flex.pair else np.ones(len(flex.sides), np.float32))]
            if flex.pair:
                shares.append((flex.pair, flex.sides))
            for desc, share in shares:
                if not 0 <= desc < len(mdl.flex_names):
                    continue
                target = deltas.setdefault(desc, np.zeros((len(used), 3), dtype=np.float64))
                np.add.at(target, where[inside], flex.deltas[inside] * share[inside, None])
    base_positions = obj.mesh.positions.astype(np.float64)
    for desc in sorted(deltas):
        obj.mesh.shape_keys.append(
            (mdl.flex_names[desc], np.ascontiguousarray(base_positions + deltas[desc] * scale, dtype=np.float32))
        )
    if deltas:
        _controls(mdl, obj, set(deltas))


def _controls(mdl: MdlFile, obj: ObjectData, descs: set[int]) -> None:
    for name, _kind, lo, hi in mdl.flex_controllers:
        obj.controls[name] = (lo, hi)
    undriven = 0
    for rule in mdl.flex_rules:
        if rule.flex not in descs:
            continue
        expression, variables = rule_expression(rule.ops, mdl)
        if expression is None:
            undriven += 1
            continue
        obj.drivers.append((mdl.flex_names[rule.flex], expression, variables))
    if undriven:
        obj.props["source_undriven_flex_rules"] = undriven


def rule_expression(ops: list[tuple[int, float]], mdl: MdlFile) -> tuple[str | None, dict[str, str]]:
    """A driver expression for a flex rule, or None when it uses operations a simple expression cannot say."""
    stack: list[str] = []
    variables: dict[str, str] = {}
    for op, value in ops:
        if op == CONST:
            stack.append(repr(float(value)))
        elif op == FETCH1:
            index = int(value)
            if not 0 <= index < len(mdl.flex_controllers):
                return None, {}
            var = f"c{index}"
            variables[var] = mdl.flex_controllers[index][0]
            stack.append(var)
        elif op in BINARY and len(stack) >= 2:
            b, a = stack.pop(), stack.pop()
            stack.append(f"({a} {BINARY[op]} {b})")
        elif op == NEG and stack:
            stack.append(f"(-{stack.pop()})")
        elif op in (MAX, MIN) and len(stack) >= 2:
            b, a = stack.pop(), stack.pop()
            stack.append(f"{'max' if op == MAX else 'min'}({a}, {b})")
        else:  # FETCH2 (another flex's weight), 2-way, n-way, combo, dominate, eyelid rules
            return None, {}
    return (stack[0], variables) if len(stack) == 1 else (None, {})
