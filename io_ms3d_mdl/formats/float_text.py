"""Numbers as text that a compiler reads back to the very float32 the model held: the shortest of 6 to 9
significant digits that round-trips (``%.9g`` always does), never ``nan``/``inf`` (they become 0 and are counted,
so the caller can warn), never ``-0``.

Vectorised: the precision each value needs is found with numpy arithmetic (the decimal rounded to p digits must lie
within half a float32 step of the value, with a margin far above float64's error, so a doubtful case takes more
digits, never fewer), then each group is formatted with one ``%`` over a tuple. Parsing the text back would cost
three times as much."""

from __future__ import annotations

import numpy as np

PRECISIONS = (6, 7, 8)  # then 9, which always round-trips a float32
SAFE = 0.4999  # of a float32 step (half is the limit; float64 arithmetic errs by ~1e-8 of a step)


def finite32(values: np.ndarray) -> tuple[np.ndarray, int]:
    """``values`` as float32 with every nan/inf replaced by 0 and -0 by 0, and how many were replaced."""
    a = np.asarray(values, dtype=np.float32)
    bad = ~np.isfinite(a)
    count = int(bad.sum())
    if count:
        a = np.where(bad, np.float32(0), a)
    return a + np.float32(0), count  # (-0 + 0 is +0)


def digits_needed(flat: np.ndarray) -> np.ndarray:
    """Per float32 value (finite), the significant digits (6..9) whose ``%g`` text reads back as that value."""
    x = np.abs(flat.astype(np.float64))
    need = np.full(flat.shape, 9, dtype=np.int8)
    nonzero = x > 0
    need[~nonzero] = 6
    if not nonzero.any():
        return need
    xs = x[nonzero]
    e = np.floor(np.log10(xs))
    e -= 10.0**e > xs  # log10's rounding near a power of ten
    e += 10.0 ** (e + 1) <= xs
    below = np.nextafter(np.abs(flat[nonzero]), np.float32(0))  # the smaller step, at a power of two
    step = np.spacing(below).astype(np.float64)
    step = np.where(below == 0, np.spacing(np.float32(0)), step)
    chosen = np.full(xs.shape, 9, dtype=np.int8)
    for p in reversed(PRECISIONS):
        scale = 10.0 ** (p - 1 - e)
        with np.errstate(over="ignore", invalid="ignore"):
            rounded = np.round(xs * scale) / scale
            ok = np.abs(rounded - xs) < SAFE * step
        chosen[ok] = p
    need[nonzero] = chosen
    return need


def float_tokens(values: np.ndarray) -> tuple[np.ndarray, int]:
    """The text of each value (flattened, in order) as an object array of str, and how many non-finite values
    were written as 0. Each distinct value is formatted once (animations repeat most of theirs)."""
    a, bad = finite32(values)
    flat = a.ravel()
    if flat.size > 1024:
        unique, inverse = np.unique(flat, return_inverse=True)
        if unique.size < flat.size // 2:
            return _tokens(unique)[inverse.reshape(-1)], bad
    return _tokens(flat), bad


def _tokens(flat: np.ndarray) -> np.ndarray:
    tokens = np.empty(flat.size, dtype=object)
    if flat.size == 0:
        return tokens
    need = digits_needed(flat)
    for p in (*PRECISIONS, 9):
        where = np.nonzero(need == p)[0]
        if where.size:
            text = (f"%.{p}g\n" * where.size) % tuple(flat[where].astype(np.float64).tolist())
            tokens[where] = text.split("\n")[:-1]
    return tokens


def float_text(value: float) -> str:
    """One number (a QC argument)."""
    return float_tokens(np.array([value]))[0][0]
