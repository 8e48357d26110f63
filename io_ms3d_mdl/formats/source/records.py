"""Offset-relative record tables of studio models, shared by every MDL layout (44–53 in ``mdl``, 2531 in
``mdl2531``): offsets are relative to the struct that holds them and every table is bounds-checked by the
cursor before it is read."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from ..binary import Cursor


def as_layout(records: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``records`` in the 44–49 layout ``dtype``: fields of the same name and type are copied, others stay zero."""
    if records.dtype == dtype:
        return records
    out = np.zeros(len(records), dtype=dtype)
    for name in dtype.names:
        if name in records.dtype.names and records.dtype.fields[name][0] == dtype.fields[name][0]:
            out[name] = records[name]
    return out


def rel(cur: Cursor, base: int, offset: int | np.integer) -> int:
    """An offset relative to a struct at ``base``; 0 stays 0 ("none")."""
    offset = int(offset)
    return base + offset if offset else 0


def table(
    cur: Cursor, owner: np.ndarray, count_field: str, index_field: str, what: str, owner_off: int
) -> tuple[int, int]:
    """(offset, count) of a table its owner points at; the offset of an empty table is never looked at."""
    count = int(owner[count_field])
    if count < 0:
        raise cur.error(f"negative {what} count {count}")
    return owner_off + int(owner[index_field]), count


def records(
    cur: Cursor, owner: np.ndarray, count_field: str, index_field: str, dtype: np.dtype, what: str, owner_off: int = 0
) -> np.ndarray:
    offset, count = table(cur, owner, count_field, index_field, what, owner_off)
    return cur.array_at(dtype, offset, count, what) if count else np.zeros(0, dtype=dtype)


def records_at(
    cur: Cursor, owner: np.ndarray, count_field: str, index_field: str, dtype: np.dtype, what: str, owner_off: int = 0
) -> Iterator[tuple[int, np.void]]:
    """``_records``, each with its own file offset."""
    offset, count = table(cur, owner, count_field, index_field, what, owner_off)
    return cur.records_at(dtype, offset, count, what) if count else iter(())
