"""The models a Bloodlines model (MDL 2531) includes (``$includemodel``): where its characters keep most of their
animations (``swat3.mdl`` → ``shared/male/npc_allsequences.mdl`` → …). Loaded like 44–49's (``includes``).

A record is 116 bytes, not 44–49's 8 (Crowbar's ``SourceMdlIncludeModel2531`` and SourceIO's ``v2531`` read the
same stride and the header's ``numincludemodels``): the name's offset (relative to the record) first, then 0,
0x7fffffff, 0 and the offset (relative to the record) of a block of 56 bytes per bone of the including model that
every file leaves as placeholders (0xffff, -1, then zeros; presumably room for a bone map the engine fills at load
time: not read), then 24 × -1. Measured on the Unofficial Patch's 276 models: 94 include 180 records, every one of
that shape.

The header's count is the engine's: the patch's ``shared/female/allsequences.mdl`` is ``alsequences.mdl`` with the
count lowered from 19 to 11 and eleven names rewritten in place (113 bytes differ between the two files), so its
eight records past the count still hold readable names that are not included; the patch's player models likewise
keep two records each behind a count of 0.
"""

from __future__ import annotations

import numpy as np

from ...errors import BudgetExceeded, FormatError, Warnings
from ..binary import Cursor
from .records import records_at, rel

INCLUDE = np.dtype(
    [
        ("sznameindex", "<i4"),
        ("unknown", "<i4", 3),  # 0, 0x7fffffff, 0
        ("bonemapindex", "<i4"),  # 56 bytes per bone of the including model, placeholders in every file
        ("unused", "<i4", 24),  # -1
    ]
)
assert INCLUDE.itemsize == 116


def include_names(cur: Cursor, header: np.void, warnings: Warnings) -> list[str]:
    """The included models' names, in the file's order; a record whose name offset is 0 names nothing and is left
    out. A table that cannot be read costs the included animations, with a warning, never the model: they are
    extras the model itself does not need (past the budget, the import still stops)."""
    try:
        names = [
            cur.string_at(rel(cur, off, g["sznameindex"]), f"name of included model {k}")
            for k, (off, g) in enumerate(
                records_at(cur, header, "numincludemodels", "includemodelindex", INCLUDE, "included models")
            )
        ]
    except BudgetExceeded:
        raise
    except FormatError as exc:
        warnings.add(f"the included models were not read: {exc.message}")
        return []
    return [name for name in names if name]
