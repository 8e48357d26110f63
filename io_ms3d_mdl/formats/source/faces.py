"""The face tables every MDL layout shares in substance (44–53 in ``mdl``, Bloodlines' 2531 in ``mdl2531``): flex
descriptor names, flex controllers, flex rules and eyeballs. Offsets are relative to the record that holds them and
every table is bounds-checked (and charged to the copy budget) by the cursor before it is read."""

from __future__ import annotations

import numpy as np

from ..binary import Cursor
from . import structs as S
from .model import MdlEyeball, MdlFlexRule
from .records import records_at, rel, table

CONST = 1  # the flex rule operation that pushes a float


def flex_names(cur: Cursor, header: np.void) -> list[str]:
    return [
        cur.string_at(rel(cur, off, r["szfacsindex"]), "flex name")
        for off, r in records_at(cur, header, "numflexdesc", "flexdescindex", S.FLEXDESC, "flexes")
    ]


def flex_controllers(cur: Cursor, header: np.void) -> list[tuple[str, str, float, float]]:
    return [
        (
            cur.string_at(rel(cur, off, c["sznameindex"]), "controller name"),
            cur.string_at(rel(cur, off, c["sztypeindex"]), "controller type", optional=True),
            float(c["min"]),
            float(c["max"]),
        )
        for off, c in records_at(
            cur, header, "numflexcontrollers", "flexcontrollerindex", S.FLEXCONTROLLER, "flex controllers"
        )
    ]


def flex_rules(cur: Cursor, header: np.void) -> list[MdlFlexRule]:
    """Rules that share one table of operations (as a compiler may, and a crafted file will thousands of times)
    share one program: it is read once, and the interpreter works it through once (scene/source/flex.py).
    Compilers lay the tables back to back: such a run is read as one table."""
    base, count = table(cur, header, "numflexrules", "flexruleindex", "flex rules", 0)
    if not count:
        return []
    rules = cur.array_at(S.FLEXRULE, base, count, "flex rules")
    sizes = rules["numops"].astype(np.int64)
    if (sizes < 0).any():
        k = int(np.flatnonzero(sizes < 0)[0])
        raise cur.error(f"negative flex rule operations count {int(sizes[k])}", base + S.FLEXRULE.itemsize * k + 4)
    starts = base + S.FLEXRULE.itemsize * np.arange(count) + rules["opindex"]
    if (sizes > 0).all() and (starts[1:] == starts[:-1] + S.FLEXOP.itemsize * sizes[:-1]).all():
        ops = cur.array_at(S.FLEXOP, int(starts[0]), int(sizes.sum()), "flex rule operations")
        cuts = np.cumsum(sizes)[:-1].tolist()
        programs = [_program(chunk) for chunk in np.split(ops, cuts)]
    else:
        shared: dict[tuple[int, int], list[tuple[int, float]]] = {}
        programs = []
        for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
            if (start, size) not in shared:
                ops = cur.array_at(S.FLEXOP, start, size, "flex rule operations") if size else np.zeros(0, S.FLEXOP)
                shared[start, size] = _program(ops)
            programs.append(shared[start, size])
    return [MdlFlexRule(flex, program) for flex, program in zip(rules["flex"].tolist(), programs, strict=True)]


def _program(ops: np.ndarray) -> list[tuple[int, float]]:
    """(op, operand): CONST's operand is a float, every other op's an int (an index, a count or unused)."""
    codes = ops["op"].tolist()
    return [
        (o, f if o == CONST else v)
        for o, v, f in zip(codes, ops["value"].tolist(), ops["value"].view("<f4").tolist(), strict=True)
    ]


def eyeballs(cur: Cursor, model_off: int, model: np.void, dtype: np.dtype = S.EYEBALL) -> list[MdlEyeball]:
    """A model's eyeballs in the version's ``dtype`` (172 bytes in 44–53, 140 in 2531), whose fields up to the lid
    descriptors are 44–49's."""
    return [
        MdlEyeball(
            cur.string_at(rel(cur, off, e["sznameindex"]), "eyeball name", optional=True),
            int(e["bone"]),
            e["org"].astype(np.float64),
            float(e["radius"]),
        )
        for off, e in records_at(cur, model, "numeyeballs", "eyeballindex", dtype, "eyeballs", model_off)
    ]
