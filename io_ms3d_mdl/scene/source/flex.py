"""Source flexes as shape keys and flex controllers as driven custom properties, without ``bpy`` (notes §1.8).

Each flex descriptor becomes one shape key per model, merged over the model's meshes: the fp16 deltas are added to
the LOD0 positions through the same compaction as the mesh. A stereo flex (``flexpair``) is shared out by each
vertex's side weight s: the descriptor gets ``(1 - s)`` of the delta and its pair gets ``s``, as the engine blends
them. Every flex rule drives its key with an expression that computes what the engine computes
(:mod:`.flex_rules`); a rule another rule reads (FETCH2) is read from its key.

Names come from the file, so they are made safe for Blender here: shape keys and controller properties fit its 63
bytes and are unique (the file's names, when they differ, are listed on the object), and controllers live under
:data:`CONTROLLER_PREFIX` so a file can never name one of our own properties (``source_*``, ``ms3d_*``).
"""

from __future__ import annotations

import numpy as np

from ...formats.source.model import MdlFile, MdlFlexRule, MdlModel
from ..names import NAME_BYTES, unique_names
from ..types import DriverTarget, ObjectData
from .flex_rules import FETCH2, ZERO, Term, flex_weight, rule_cost, rule_term, stored_weight

CONTROLLER_PREFIX = "flex:"  # every controller property is named "flex:<controller>"
WEIGHT_PREFIX = "flex weight:"  # a flex weight other rules read, when no shape key holds it: "flex weight:<flex>"
BASIS = "Basis"  # the builder's rest key; no flex may take its name
MAX_EXPRESSION = 255  # Blender's driver expressions hold 255 bytes; a longer one would be cut into nonsense


def add_shape_keys(mdl: MdlFile, model: MdlModel, obj: ObjectData, used: np.ndarray, scale: float) -> None:
    """``used``: the VVD indices of ``obj``'s vertices (sorted, as compaction left them, then any copies of
    vertices a back face got: a copy moves with its vertex)."""
    pool, copy_of = np.unique(used, return_inverse=True)
    by_desc: dict[
        int, list[tuple[np.ndarray, np.ndarray]]
    ] = {}  # descriptor → (pool rows, their deltas), in file order
    for mesh in model.meshes:
        base = model.vertex_index + mesh.vertex_offset
        for flex in mesh.flexes:
            where = np.searchsorted(pool, base + flex.indices)
            inside = where < len(pool)
            inside[inside] &= pool[where[inside]] == base + flex.indices[inside]
            shares = [(flex.desc, 1.0 - flex.sides if flex.pair else np.ones(len(flex.sides), np.float32))]
            if flex.pair:
                shares.append((flex.pair, flex.sides))
            for desc, share in shares:
                if 0 <= desc < len(mdl.flex_names):
                    by_desc.setdefault(desc, []).append((where[inside], flex.deltas[inside] * share[inside, None]))
    descs = sorted(by_desc)
    base_positions = obj.mesh.positions.astype(np.float64)
    file_names = [mdl.flex_names[d] for d in descs]
    keys = unique_names(file_names, "flex", taken=[BASIS])
    for desc, key in zip(descs, keys, strict=True):
        # a descriptor's deltas summed in one bincount (it adds in input order, as np.add.at did flex by flex);
        # one key's temporaries at a time, so a model's keys never all sit in float64 at once
        rows = np.concatenate([r for r, _m in by_desc[desc]])
        moves = np.concatenate([m for _r, m in by_desc[desc]]).astype(np.float64)
        summed = np.stack([np.bincount(rows, moves[:, c], minlength=len(pool)) for c in range(3)], axis=1)
        moved = base_positions + summed[copy_of.ravel()] * scale
        obj.mesh.shape_keys.append((key, moved.astype(np.float32)))
    _record_renames(obj, "source_flex_key_names", file_names, keys)
    if descs:
        _controls(mdl, obj, dict(zip(descs, keys, strict=True)))


def controller_properties(names: list[str]) -> dict[str, str]:
    """The custom property of each distinct controller name: prefixed, within 63 bytes, unique. Controllers that
    share a name share a property (the engine finds controllers by name)."""
    distinct = list(dict.fromkeys(names))
    short = unique_names(distinct, "controller", limit=NAME_BYTES - len(CONTROLLER_PREFIX))
    return {name: CONTROLLER_PREFIX + s for name, s in zip(distinct, short, strict=True)}


def _controls(mdl: MdlFile, obj: ObjectData, key_of: dict[int, str]) -> None:
    """Controller properties with their ranges, and a driver on every key a rule computes."""
    names = [c[0] for c in mdl.flex_controllers]
    prop_of = controller_properties(names)
    for name, _kind, lo, hi in mdl.flex_controllers:
        obj.controls[prop_of[name]] = _range(lo, hi)
    distinct = list(prop_of)
    _record_renames(obj, "source_flex_controller_names", distinct, [prop_of[n] for n in distinct], CONTROLLER_PREFIX)
    undriven = 0
    driven, stored = _rule_weights(mdl, key_of)
    for target, term in driven:
        if term is None:
            undriven += 1
            continue
        variables = {
            var: _variable(kind, index, prop_of, names, key_of, stored) for var, kind, index in sorted(term.uses)
        }
        obj.drivers.append((target, term.text, variables))
    if undriven:
        obj.props["source_undriven_flex_rules"] = undriven


def _variable(
    kind: str, index: int, prop_of: dict[str, str], names: list[str], key_of: dict[int, str], stored: dict[int, str]
) -> DriverTarget:
    """What a variable reads: a controller property, a shape key's value, or a stored weight's property."""
    if kind == "controller":
        return prop_of[names[index]]
    if kind == "flex":
        return ("KEY", key_of[index])
    return stored[index]


def _rule_weights(
    mdl: MdlFile, key_of: dict[int, str]
) -> tuple[list[tuple[DriverTarget, Term | None]], dict[int, str]]:
    """What each rule drives (a shape key, or a custom property holding a weight other rules read) with its
    expression (None: not stated), and the property of each stored weight by rule index.

    The engine runs the rules in order into weights zeroed first; a later rule for the same flex overwrites the
    weight, and FETCH2 reads what the rules before it left. So the last rule of a flex drives its key. A weight
    that a later rule reads is read from that key when the key holds it, else from an intermediate custom property
    driven by the rule (flexes without a shape key in this model, or overwritten later): repeating the expression
    in every reader would outgrow Blender's 255 bytes."""
    # rules for no flex the engine skips
    rules = [(i, r) for i, r in enumerate(mdl.flex_rules) if 0 <= r.flex < len(mdl.flex_names)]
    last = {rule.flex: i for i, rule in rules}
    read = _weights_read(rules)
    kept = [i for i, rule in rules if i in read and not (last[rule.flex] == i and rule.flex in key_of)]
    short = unique_names(
        [mdl.flex_names[mdl.flex_rules[i].flex] for i in kept], "flex", limit=NAME_BYTES - len(WEIGHT_PREFIX)
    )
    stored = {i: WEIGHT_PREFIX + name for i, name in zip(kept, short, strict=True)}
    weights: dict[int, Term | None] = {}
    out: list[tuple[DriverTarget, Term | None]] = []
    run = _Interpreter(mdl)
    for i, rule in rules:
        term = run(rule.ops, weights)
        weights[rule.flex] = term
        if last[rule.flex] == i and rule.flex in key_of:
            out.append((key_of[rule.flex], term))
            if term is not None and term.const is None:
                weights[rule.flex] = flex_weight(rule.flex)
        elif i in stored and term is not None and term.const is None:
            out.append((("PROP", stored[i]), term))
            weights[rule.flex] = stored_weight(i)
    return out, stored


class _Interpreter:
    """Works a model's rules through, each distinct program once for the weights it reads: rules sharing one table
    of operations (the reader gives them one program) and reading the same weights have the same term."""

    def __init__(self, mdl: MdlFile) -> None:
        self.mdl = mdl
        self.memo: dict = {}  # remaps and eyelids over this model's controllers
        self.terms: dict[tuple, Term | None] = {}
        self.fetches: dict[int, tuple[int, ...]] = {}

    def __call__(self, ops: list[tuple[int, float]], weights: dict[int, Term | None]) -> Term | None:
        fetches = self.fetches.get(id(ops))
        if fetches is None:
            fetches = self.fetches[id(ops)] = _fetched(ops)
        key = (id(ops), *(weights.get(i, ZERO) for i in fetches))
        if key not in self.terms:
            self.terms[key] = _stated(ops, self.mdl, weights, self.memo)
        return self.terms[key]


def _fetched(ops: list[tuple[int, float]]) -> tuple[int, ...]:
    return tuple(sorted({int(value) for op, value in ops if op == FETCH2}))


def rule_work(rules: list[MdlFlexRule]) -> int:
    """Flex rule budget units of one run over ``rules`` (flex_rules.rule_cost): a program shared by rules is
    worked through once unless it reads other rules' weights (FETCH2), and every rule costs a unit of its own."""
    known: dict[int, tuple[int, bool]] = {}  # per program: its cost, and whether it reads weights
    work = len(rules)
    for rule in rules:
        program = known.get(id(rule.ops))
        if program is None:
            program = known[id(rule.ops)] = (rule_cost(rule.ops), bool(_fetched(rule.ops)))
            work += program[0]
        elif program[1]:
            work += program[0]
    return work


def _weights_read(rules: list[tuple[int, MdlFlexRule]]) -> set[int]:
    """The rules whose weight a later rule fetches (FETCH2) before another rule of that flex overwrites it."""
    latest: dict[int, int] = {}
    read = set()
    for i, rule in rules:
        for op, value in rule.ops:
            if op == FETCH2 and int(value) in latest:
                read.add(latest[int(value)])
        latest[rule.flex] = i
    return read


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


def rule_expression(
    ops: list[tuple[int, float]], mdl: MdlFile, weights: dict[int, Term | None] | None = None
) -> tuple[str | None, dict[str, tuple[str, int]]]:
    """A rule's driver expression and its variables (``c<i>``: ("controller", i); ``k<d>``: ("flex", d)), or
    (None, {}) when it cannot be stated in Blender's 255 bytes."""
    term = _stated(ops, mdl, weights)
    if term is None:
        return None, {}
    return term.text, {var: (kind, index) for var, kind, index in sorted(term.uses)}


def _stated(
    ops: list[tuple[int, float]], mdl: MdlFile, weights: dict[int, Term | None] | None, memo: dict | None = None
) -> Term | None:
    """The rule's weight as a term that fits a driver expression, or None."""
    term = rule_term(ops, mdl.flex_controllers, len(mdl.flex_names), weights, memo)
    return term if term is not None and len(term.text) <= MAX_EXPRESSION else None
