"""The face tables every MDL layout shares in substance (44–53 in ``mdl``, Bloodlines' 2531 in ``mdl2531``): flex
descriptor names, flex controllers, flex rules and eyeballs. Offsets are relative to the record that holds them and
every table is bounds-checked (and charged to the copy budget) by the cursor before it is read."""

from __future__ import annotations

import numpy as np

from ..binary import Cursor
from . import structs as S
from .model import MdlEyeball, MdlFlexRule
from .records import records, records_at, rel


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
    share one program: it is read once, and the interpreter works it through once (scene/source/flex.py)."""
    out = []
    programs: dict[tuple[int, int], list[tuple[int, float]]] = {}
    for off, r in records_at(cur, header, "numflexrules", "flexruleindex", S.FLEXRULE, "flex rules"):
        where = (off + int(r["opindex"]), int(r["numops"]))
        program = programs.get(where)
        if program is None:
            ops = records(cur, r, "numops", "opindex", S.FLEXOP, "flex rule operations", off)
            codes = ops["op"].astype(np.int64)
            values = np.where(codes == 1, ops["value"].view("<f4").astype(np.float64), ops["value"]).tolist()
            program = programs[where] = [
                (o, v if o == 1 else int(v)) for o, v in zip(codes.tolist(), values, strict=True)
            ]
        out.append(MdlFlexRule(int(r["flex"]), program))
    return out


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
