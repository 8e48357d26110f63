"""Source flexes as shape keys and flex controllers as driven custom properties, without ``bpy`` (notes §1.8).

Each flex descriptor becomes one shape key per model, merged over the model's meshes: the fp16 deltas are added to
the LOD0 positions through the same compaction as the mesh. A stereo flex (``flexpair``) is shared out by each
vertex's side weight s: the descriptor gets ``(1 - s)`` of the delta and its pair gets ``s``, as the engine blends
them. Flex rules are reverse-polish programs over controllers; the simple ones (constants, controllers,
arithmetic, min/max) become driver expressions, the rest are listed as not driven.

Names come from the file, so they are made safe for Blender here: shape keys and controller properties fit its 63
bytes and are unique (the file's names, when they differ, are listed on the object), and controllers live under
:data:`CONTROLLER_PREFIX` so a file can never name one of our own properties (``source_*``, ``ms3d_*``).
"""

from __future__ import annotations

import numpy as np

from ..formats.source.model import MdlFile, MdlModel
from .bones import NAME_BYTES, unique_names
from .types import ObjectData

CONST, FETCH1, FETCH2, ADD, SUB, MUL, DIV, NEG, MAX, MIN = 1, 2, 3, 4, 5, 6, 7, 8, 13, 14
BINARY = {ADD: "+", SUB: "-", MUL: "*", DIV: "/"}
CONTROLLER_PREFIX = "flex:"  # every controller property is named "flex:<controller>"
BASIS = "Basis"  # the builder's rest key; no flex may take its name
MAX_EXPRESSION = 255  # Blender's driver expressions hold 255 bytes; a longer one would be cut into nonsense


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
    descs = sorted(deltas)
    file_names = [mdl.flex_names[d] for d in descs]
    keys = unique_names(file_names, "flex", taken=[BASIS])
    for desc, key in zip(descs, keys, strict=True):
        obj.mesh.shape_keys.append((key, np.ascontiguousarray(base_positions + deltas[desc] * scale, dtype=np.float32)))
    _record_renames(obj, "source_flex_key_names", file_names, keys)
    if deltas:
        _controls(mdl, obj, dict(zip(descs, keys, strict=True)))


def controller_properties(names: list[str]) -> dict[str, str]:
    """The custom property of each distinct controller name: prefixed, within 63 bytes, unique. Controllers that
    share a name share a property (the engine finds controllers by name)."""
    distinct = list(dict.fromkeys(names))
    short = unique_names(distinct, "controller", limit=NAME_BYTES - len(CONTROLLER_PREFIX))
    return {name: CONTROLLER_PREFIX + s for name, s in zip(distinct, short, strict=True)}


def _controls(mdl: MdlFile, obj: ObjectData, key_of: dict[int, str]) -> None:
    """Controller properties with their ranges, and a driver for every rule simple enough to state."""
    names = [c[0] for c in mdl.flex_controllers]
    prop_of = controller_properties(names)
    for name, _kind, lo, hi in mdl.flex_controllers:
        obj.controls[prop_of[name]] = _range(lo, hi)
    distinct = list(prop_of)
    _record_renames(obj, "source_flex_controller_names", distinct, [prop_of[n] for n in distinct], CONTROLLER_PREFIX)
    undriven = 0
    for rule in mdl.flex_rules:
        if rule.flex not in key_of:
            continue
        expression, variables = rule_expression(rule.ops, mdl)
        if expression is None or len(expression) > MAX_EXPRESSION:
            undriven += 1
            continue
        obj.drivers.append((key_of[rule.flex], expression, {v: prop_of[c] for v, c in variables.items()}))
    if undriven:
        obj.props["source_undriven_flex_rules"] = undriven


def _range(lo: float, hi: float) -> tuple[float, float]:
    """A usable slider range: non-finite ends fall back to 0..1, reversed ones are swapped."""
    lo = float(lo) if np.isfinite(lo) else 0.0
    hi = float(hi) if np.isfinite(hi) else 1.0
    return (lo, hi) if lo <= hi else (hi, lo)


def _record_renames(obj: ObjectData, prop: str, file_names: list[str], names: list[str], prefix: str = "") -> None:
    """Keep the file's name of every key or controller Blender gets under another (shortened, numbered) name."""
    renamed = [
        {"name": name, "source_name": file_name}
        for file_name, name in zip(file_names, names, strict=True)
        if file_name and name != prefix + file_name
    ]
    if renamed:
        obj.props[prop] = renamed


def rule_expression(ops: list[tuple[int, float]], mdl: MdlFile) -> tuple[str | None, dict[str, str]]:
    """A driver expression for a flex rule, or None when it uses operations a simple expression cannot say.

    Written compactly (no spaces, controllers as ``c<index>``) because Blender keeps 255 bytes of it."""
    stack: list[str] = []
    variables: dict[str, str] = {}
    for op, value in ops:
        if op == CONST:
            stack.append(f"{float(value):g}")
        elif op == FETCH1:
            index = int(value)
            if not 0 <= index < len(mdl.flex_controllers):
                return None, {}
            var = f"c{index}"
            variables[var] = mdl.flex_controllers[index][0]
            stack.append(var)
        elif op == DIV and len(stack) >= 2:
            # The engine divides only by a denominator above 0.0001 and yields 0 otherwise (0/0 at rest), where a
            # plain division would raise and Blender stop evaluating the driver. No conditional expression:
            # Blender's Python-free evaluator must accept it.
            b, a = stack.pop(), stack.pop()
            stack.append(f"(({b}>0.0001)*{a}/max({b},0.0001))")
        elif op in BINARY and len(stack) >= 2:
            b, a = stack.pop(), stack.pop()
            stack.append(f"({a}{BINARY[op]}{b})")
        elif op == NEG and stack:
            stack.append(f"(-{stack.pop()})")
        elif op in (MAX, MIN) and len(stack) >= 2:
            b, a = stack.pop(), stack.pop()
            stack.append(f"{'max' if op == MAX else 'min'}({a},{b})")
        else:  # FETCH2 (another flex's weight), 2-way, n-way, combo, dominate, eyelid rules
            return None, {}
    return (stack[0], variables) if len(stack) == 1 else (None, {})
