"""Every flex rule drives its key with what the engine computes: each op's driver expression, evaluated in Python,
against a plain-Python model of the engine's interpreter (flex_reference.py); a whole model's drivers, including
weights read from other flexes (FETCH2), through the importer and through Blender."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from conftest import bpy, sample_files
from flex_reference import run_flex_rules
from source_writer import character_spec, write_mdl, write_source
from test_blender_hostile_names import SFlexes, _mesh_offset, _Tail, with_flexes

from io_ms3d_mdl.formats.source import structs as S
from io_ms3d_mdl.formats.source.model import MdlFile
from io_ms3d_mdl.scene.load import load_source
from io_ms3d_mdl.scene.source.convert import SourceOptions
from io_ms3d_mdl.scene.source.flex import MAX_EXPRESSION, WEIGHT_PREFIX, rule_expression
from io_ms3d_mdl.scene.source.flex_rules import flex_weight

# (name, min, max): 2 is an n-way value controller, 3..5 eyelid controllers, 6 an odd range, 7 a flat one
CONTROLLERS = [
    ("open", 0.0, 1.0),
    ("smile", -1.0, 1.0),
    ("multi", 0.0, 1.0),
    ("lid_v", 0.0, 1.0),
    ("lid", 0.0, 1.0),
    ("updown", -1.0, 1.0),
    ("odd", -2.0, 3.0),
    ("flat", 0.5, 0.5),
]
CONST, FETCH1, FETCH2, ADD, SUB, MUL, DIV, NEG, EXP = range(1, 10)
MAX, MIN, TWO_WAY_0, TWO_WAY_1, NWAY, COMBO, DOMINATE, LOWER_EYELID, UPPER_EYELID = range(13, 22)


def c(value: float) -> tuple[int, float]:
    return (CONST, value)


def f(index: int) -> tuple[int, float]:
    return (FETCH1, index)


def ramp(x, y, z, w, chosen):
    return [c(x), c(y), c(z), c(w), c(chosen)]


PROGRAMS = {
    "const": [c(0.3)],
    "fetch1": [f(1)],
    "add sub mul neg": [f(0), f(1), (ADD, 0), f(6), (SUB, 0), c(0.5), (MUL, 0), (NEG, 0)],
    "max min": [f(1), f(6), (MAX, 0), c(0.25), (MIN, 0)],
    "div by controller": [f(0), f(1), (DIV, 0)],  # 0 when smile <= 0.0001
    "div by small constant": [f(0), c(0.00005), (DIV, 0)],
    "div by constant": [f(6), c(3.0), (DIV, 0)],
    "fetch2": [(FETCH2, 5), f(1), (MUL, 0), (FETCH2, 9), (ADD, 0)],  # flex 9: no rule yet, so 0
    "exp does nothing": [f(0), (EXP, 0), c(2.0), (MUL, 0)],
    "2-way 0": [(TWO_WAY_0, 1)],
    "2-way 1": [(TWO_WAY_1, 1)],
    "2-way of a wide range": [(TWO_WAY_0, 6), (TWO_WAY_1, 6), (SUB, 0)],
    "n-way": [*ramp(0.0, 0.25, 0.5, 1.0, 2), (NWAY, 1)],
    "n-way plateau to the end": [*ramp(-0.5, 0.0, 1.0, 1.5, 6), (NWAY, 0)],
    "n-way steps": [*ramp(0.25, 0.25, 0.75, 0.75, 2), (NWAY, 0)],  # x == y and z == w
    "n-way overlapping": [*ramp(0.0, 0.75, 0.25, 1.0, 2), (NWAY, 0)],  # y > z
    "n-way invalid controller": [c(0.5), *ramp(0.0, 0.2, 0.4, 1.0, 42), (NWAY, 0)],  # does nothing
    "combo": [f(0), f(1), f(6), (COMBO, 3)],
    "combo of 1": [f(6), c(2.0), f(0), (COMBO, 1), (ADD, 0)],
    "combo of 0 revives a popped value": [c(0.5), f(1), (ADD, 0), (COMBO, 0), (MUL, 0)],
    "dominate": [f(0), f(1), f(2), (DOMINATE, 2)],
    "dominate by 1": [f(6), f(0), (DOMINATE, 1)],
    "dominate by 0 reads above the top": [f(6), f(1), (ADD, 0), (DOMINATE, 0)],
    "lower eyelid": [c(5), c(0), c(4), (LOWER_EYELID, 3)],
    "upper eyelid": [c(5), c(0), c(4), (UPPER_EYELID, 3)],
    "eyelids over odd and flat ranges": [
        *(c(6), c(1), c(7)),
        (LOWER_EYELID, 3),
        *(c(6), c(1), c(7)),
        (UPPER_EYELID, 6),
        (ADD, 0),
    ],
    "eyelid index truncated": [c(5.9), c(0), c(4.7), (UPPER_EYELID, 3)],
    "eyelid invalid index": [f(0), c(5), c(0), c(99), (LOWER_EYELID, 3)],  # does nothing: the weight is open
    "too few values": [(ADD, 0), f(0), (DIV, 0), c(0.5), (COMBO, 2), (DOMINATE, 1), (NWAY, 0), (LOWER_EYELID, 3)],
    "bad operands": [f(0), (FETCH1, 99), (FETCH2, 99), (COMBO, 99), (TWO_WAY_1, -1), (17, 0)],
    "several left: slot 0 wins": [f(0), f(1), f(6)],
    "parse-only and unknown ops": [f(1), (10, 0), (11, 0), (12, 0), (22, 0), (0, 0)],
}
NUM_FLEXES = 12


def fake_mdl() -> MdlFile:
    mdl = MdlFile.__new__(MdlFile)
    mdl.flex_controllers = [(name, "default", lo, hi) for name, lo, hi in CONTROLLERS]
    mdl.flex_names = [f"f{i}" for i in range(NUM_FLEXES)]
    return mdl


def evaluate(expression: str, values: dict[str, float]) -> float:
    """What Blender's simple-expression evaluator computes, here with Python's own (same grammar, doubles)."""
    functions = {"min": min, "max": max, "clamp": lambda x, lo=0.0, hi=1.0: min(max(x, lo), hi), "exp": math.exp}
    return float(eval(expression, {"__builtins__": {}, **functions}, values))


def settings(count: int = len(CONTROLLERS)):
    """Controller values: each one's range ends, 0, and points between; the rest held at an odd value."""
    per = []
    for _name, lo, hi in CONTROLLERS[:count]:
        per.append(sorted({lo, hi, min(max(0.0, lo), hi), lo + 0.3 * (hi - lo), lo + 0.55 * (hi - lo), 0.5 * hi}))
    return per


def close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-6 * max(1.0, abs(a))


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_each_op_computes_what_the_engine_computes(name):
    ops = PROGRAMS[name]
    mdl = fake_mdl()
    before = (5, [f(0), f(6), (MUL, 0)])  # a rule before this one: flex 5's weight is what FETCH2 reads
    expression, variables = rule_expression(ops, mdl, {5: flex_weight(5)})
    assert expression is not None and len(expression) <= MAX_EXPRESSION
    assert "exp" not in expression and "**" not in expression
    used = {index for kind, index in variables.values() if kind == "controller"}
    grid = settings()
    held = [lo + 0.37 * (hi - lo) for _n, lo, hi in CONTROLLERS]
    axes = [grid[i] if i in used or i in (0, 6) else [held[i]] for i in range(len(CONTROLLERS))]
    checked = 0
    for values in itertools.product(*axes):
        dest = run_flex_rules([before, (0, ops)], [(lo, hi) for _n, lo, hi in CONTROLLERS], list(values), NUM_FLEXES)
        env = {var: values[i] if kind == "controller" else dest[i] for var, (kind, i) in variables.items()}
        got = evaluate(expression, env)
        assert close(dest[0], got), (name, expression, values, dest[0], got)
        checked += 1
    assert checked >= 6


def test_a_rule_reading_a_computed_controller_index_is_not_stated():
    # the n-way value controller comes from the stack; computed from a controller, it is chosen at run time
    assert rule_expression([*ramp(0.0, 0.2, 0.4, 1.0, 0)[:-1], f(2), (NWAY, 0)], fake_mdl()) == (None, {})


# --- a whole model: keys, keyless flexes other rules read, rules overwriting a flex ----------------------------

# Descriptors 0..6 have shape keys; 7 and 8 do not, and 9 has neither a key nor a rule.
MODEL_RULES = [
    (7, [f(0), f(1), (MUL, 0), c(0.25), (ADD, 0)]),  # keyless, read below: stored in a property
    (0, [(FETCH2, 7), (TWO_WAY_1, 1), (MUL, 0), (FETCH2, 6), (ADD, 0)]),  # flex 6's rule comes later: reads 0
    (1, [(TWO_WAY_0, 1), f(6), (MUL, 0)]),  # beyond 0..1: the engine does not clamp weights
    (2, [*ramp(0.0, 0.25, 0.5, 1.0, 2), (NWAY, 0)]),
    (3, [c(5), c(0), c(4), (LOWER_EYELID, 3)]),
    (4, [c(5), c(0), c(4), (UPPER_EYELID, 3), (FETCH2, 0), (ADD, 0)]),  # reads key 0
    (7, [(FETCH2, 7), (NEG, 0), (FETCH2, 9), (ADD, 0)]),  # overwrites 7 from its old weight
    (5, [f(0), f(3), f(4), (COMBO, 3)]),  # overwritten below, never read: drives nothing
    (6, [(FETCH2, 7), f(1), f(2), (DOMINATE, 2)]),
    (8, [f(0), (EXP, 0), c(2.0), (MUL, 0)]),
    (5, [(FETCH2, 0), (FETCH2, 8), (ADD, 0), f(6), (DIV, 0)]),
    (42, [c(1.0)]),  # no such flex: the engine skips it
]
KEYS = 7


def with_key_flexes(mdl: bytes) -> bytes:
    """Flexes 0..6 on the body's first mesh, each moving one vertex its own way."""
    mdl = with_flexes(
        mdl, SFlexes([f"f{i}" for i in range(NUM_FLEXES)], [(n, lo, hi) for n, lo, hi in CONTROLLERS], MODEL_RULES)
    )
    tail = _Tail(mdl)
    h = np.frombuffer(mdl, S.STUDIOHDR, 1)[0]
    records = np.zeros(KEYS, S.FLEX)
    first = tail.records(S.FLEX, records)
    for desc in range(KEYS):
        verts = np.zeros(1, S.VERTANIM)
        verts[0]["index"] = desc % 4
        verts[0]["delta"] = np.array((0.0, 0.0, 1.0 + desc), "<f2").view("<u2")
        at = first + desc * S.FLEX.itemsize
        records[desc]["flexdesc"], records[desc]["numverts"] = desc, 1
        records[desc]["vertindex"] = tail.records(S.VERTANIM, verts) - at
    tail.put(first, records)
    mesh_at = _mesh_offset(tail.buf, h, 0, 0, 0)
    mesh = np.frombuffer(bytes(tail.buf[mesh_at : mesh_at + S.MESH.itemsize]), S.MESH).copy()
    mesh[0]["numflexes"], mesh[0]["flexindex"] = KEYS, first - mesh_at
    tail.put(mesh_at, mesh)
    return bytes(tail.buf)


def write_model(folder):
    spec = character_spec(includes=[])
    path = write_source(spec, folder, "face")
    path.write_bytes(with_key_flexes(write_mdl(spec)))
    return path


def reference(values: list[float]) -> list[float]:
    return run_flex_rules(MODEL_RULES, [(lo, hi) for _n, lo, hi in CONTROLLERS], values, NUM_FLEXES)


MODEL_SETTINGS = [
    [0.0] * len(CONTROLLERS),
    [1.0, 1.0, 0.3, 0.2, 0.9, -0.6, 3.0, 0.5],
    [0.7, -0.4, 0.1, 0.8, 0.6, 0.5, -2.0, 0.5],
    [0.25, 0.8, 0.75, 0.0, 1.0, 1.0, 1.5, 0.5],
]


def test_a_model_drives_every_key_as_the_engine_weighs_it(tmp_path):
    (obj,) = [o for o in load_source(str(write_model(tmp_path))).objects if o.drivers]
    assert "source_undriven_flex_rules" not in obj.props
    keys = {name for name, _ in obj.mesh.shape_keys}
    assert keys == {f"f{i}" for i in range(KEYS)}
    driven = [d for d, _e, _v in obj.drivers]
    # every key but f5's first rule, plus flex 7's first weight (read by rules 0 and 6 before it is overwritten)
    assert sorted(d for d in driven if isinstance(d, str)) == [f"f{i}" for i in range(KEYS)]
    assert sorted(d for d in driven if not isinstance(d, str)) == [
        ("PROP", WEIGHT_PREFIX + n) for n in ("f7", "f7.001", "f8")
    ]
    for values in MODEL_SETTINGS:
        dest = reference(values)
        props = {f"flex:{n}": v for (n, _lo, _hi), v in zip(CONTROLLERS, values, strict=True)}
        keys_now: dict[str, float] = {}
        for target, expression, variables in obj.drivers:  # in rule order, so what they read is already known
            env = {var: keys_now[t[1]] if isinstance(t, tuple) else props[t] for var, t in variables.items()}
            value = evaluate(expression, env)
            if isinstance(target, tuple):
                props[target[1]] = value
            else:
                keys_now[target] = value
        for i in range(KEYS):
            assert close(dest[i], keys_now[f"f{i}"]), (i, values, dest[i], keys_now[f"f{i}"])


def test_every_sample_drives_every_rule():
    models = sample_files("source", "*.mdl")
    options = SourceOptions(import_animations=False, animations="NONE", find_materials=False, import_physics=False)
    driven = 0
    for model in models:
        for obj in load_source(str(model), options).objects:
            assert "source_undriven_flex_rules" not in obj.props, model
            assert all(len(e) <= MAX_EXPRESSION for _d, e, _v in obj.drivers)
            driven += len(obj.drivers)
    assert len(models) >= 10 and driven >= 38  # scout's 38 keys at least


@pytest.mark.skipif(bpy is None, reason="Blender (the bpy wheel) is not installed")
def test_blender_keys_follow_the_engine(blender, tmp_path):
    assert blender.ops.import_scene.source_mdl(filepath=str(write_model(tmp_path))) == {"FINISHED"}
    obj = next(o for o in blender.data.objects if o.type == "MESH" and o.data.shape_keys)
    key = obj.data.shape_keys
    drivers = list(key.animation_data.drivers) + list(obj.animation_data.drivers)
    assert len(drivers) == KEYS + 3
    assert all(d.driver.is_valid for d in drivers)
    assert all(d.driver.is_simple_expression for d in drivers)  # no Python, no auto-run prompt
    assert any(v.targets[0].id == key for d in drivers for v in d.driver.variables)  # FETCH2 reads a key
    blocks = key.key_blocks
    for values in MODEL_SETTINGS:
        for (name, _lo, _hi), value in zip(CONTROLLERS, values, strict=True):
            obj[f"flex:{name}"] = value
        obj.update_tag()
        blender.context.view_layer.update()
        dest = reference(values)
        got = [blocks[f"f{i}"].value for i in range(KEYS)]
        np.testing.assert_allclose(got, dest[:KEYS], atol=1e-5, err_msg=str(values))


def test_nested_ramps_cannot_blow_up_the_expression():
    """N-way ramps repeat their operands: a crafted rule feeding each ramp into the next would grow its text
    exponentially. It is given up (not driven) after a bounded amount of work."""
    import time

    from io_ms3d_mdl.scene.source.flex_rules import rule_term

    controllers = [("c", "", 0.0, 1.0)]
    ops = [(2, 0)] * 4 + [(1, 0.0), (17, 0)]  # x y z w from a controller, value controller 0: an n-way
    for _ in range(40):  # each result becomes the next ramp's x
        ops += [(2, 0)] * 3 + [(1, 0.0), (17, 0)]
    started = time.perf_counter()
    assert rule_term(ops, controllers, 1) is None
    assert time.perf_counter() - started < 1.0
