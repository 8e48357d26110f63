"""Numbers as text that a compiler reads back to the very float32 the model held: the shortest of 6 to 9
significant digits that round-trips (``%.9g`` always does), never ``nan``/``inf`` (they become 0 and are counted,
so the caller can warn), never ``-0``.

Vectorised: the precision each value needs is found with numpy arithmetic (the decimal rounded to p digits must lie
within half a float32 step of the value, with a margin far above float64's error, so a doubtful case takes more
digits, never fewer). ``float_tokens`` then formats each group with one ``%`` over a tuple (str objects: the QC
writer's few numbers, and the reference); ``float_chars`` builds the same bytes with numpy arithmetic (the value
scaled to a 9-digit integer, its digits in threes from a table, placed by the layout ``%g`` picks), as a table
of padded rows the SMD writer assembles into lines without a Python object per number or line. Parsing the text
back would cost three times as much."""

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
    return _needed(flat)[0]


def _needed(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``digits_needed`` and each value's decimal exponent (0 for a zero)."""
    x = np.abs(flat.astype(np.float64))
    need = np.full(flat.shape, 9, dtype=np.int8)
    exponent = np.zeros(flat.shape, dtype=np.int64)
    nonzero = x > 0
    need[~nonzero] = 6
    if not nonzero.any():
        return need, exponent
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
    exponent[nonzero] = e
    return need, exponent


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


WIDTH = 16  # "-0.000ddddddddd" (15) and "-d.dddddddde-XX" (15) fit; 0 pads the rest
# Per value, a table of the bytes its text is made of: the 9 digits (most significant first), then these
_DOT, _ZERO, _MINUS, _E, _EXP_SIGN, _EXP_TENS, _EXP_ONES, _NUL = range(9, 17)
_COLUMNS = 17


def _layouts() -> np.ndarray:
    """(2, 15, 10, WIDTH): for a sign (0: +, 1: -), a layout (0..12: fixed with exponent -4..8; 13: exponent
    notation) and s significant digits (1..9), which table column each byte of ``%g``'s text takes."""
    table = np.full((2, 15, 10, WIDTH), _NUL, dtype=np.intp)
    for neg in (0, 1):
        for layout in range(14):
            for s in range(1, 10):
                cols = [_MINUS] * neg
                if layout == 13:  # d[.ddd]e±XX
                    cols += [0] + ([_DOT, *range(1, s)] if s > 1 else []) + [_E, _EXP_SIGN, _EXP_TENS, _EXP_ONES]
                else:
                    x = layout - 4
                    if x >= 0:  # the integer digits (a zero there is never stripped), then the fraction's
                        ints = x + 1
                        cols += list(range(ints)) + ([_DOT, *range(ints, s)] if s > ints else [])
                    else:
                        cols += [_ZERO, _DOT] + [_ZERO] * (-x - 1) + list(range(s))
                table[neg, layout, s, : len(cols)] = cols
    return table


_LAYOUTS = _layouts().reshape(-1, WIDTH)  # row (neg * 15 + layout) * 10 + s
_LENGTHS = (_LAYOUTS != _NUL).sum(axis=1)
_RUNS_FROM = 1 << 18  # values from which per-layout runs beat one gather (measured on the samples' animations)
_TRIPLES = np.array([f"{i:03d}".encode() for i in range(1000)]).view(np.uint8).reshape(1000, 3)
_TRAILING = np.array([3] + [len(f"{i:03d}") - len(f"{i:03d}".rstrip("0")) for i in range(1, 1000)])


def float_chars(values: np.ndarray) -> tuple[np.ndarray, int]:
    """The text of each value (flattened, in order) as rows of ASCII bytes, 0-padded to the longest (at most
    ``WIDTH``), and how many non-finite values were written as 0: the same text
    as ``float_tokens``, built with numpy arithmetic (the digits of the value scaled to an integer), so a million
    numbers cost milliseconds. A value whose scaled digits float64 cannot settle (a near-tie, or a scale beyond
    10^±22) is formatted by ``%`` instead, so the text is exactly ``%.{p}g``'s."""
    a, bad = finite32(values)
    flat = a.ravel()
    if flat.size > 1024:
        unique, inverse = _unique(flat)
        if unique.size < flat.size // 2:
            return _chars(unique)[inverse], bad
    return _chars(flat), bad


def _unique(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)`` for finite float32 without -0, sorted by bit pattern instead (a
    stable integer sort is the cheaper one; the order does not matter here)."""
    bits = flat.view(np.uint32)
    order = np.argsort(bits, kind="stable")
    ordered = bits[order]
    first = np.empty(flat.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(flat.size, dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first].view(np.float32), inverse


def _chars(flat: np.ndarray) -> np.ndarray:
    n = flat.size
    if n == 0:
        return np.zeros((0, WIDTH), dtype=np.uint8)
    p, e = _needed(flat)
    p = p.astype(np.int64)
    x = np.abs(flat.astype(np.float64))
    nonzero = x > 0
    safe = np.where(nonzero, x, 1.0)
    k = p - 1 - e
    exact = nonzero & (np.abs(k) <= 22)
    k = np.where(exact, k, 0)
    y = np.where(k >= 0, safe * 10.0 ** np.abs(k), safe / 10.0 ** np.abs(k))  # one rounding: half an ulp
    exact &= np.abs(y - np.floor(y) - 0.5) > 1e-6  # not a near-tie, where that half ulp could tip the digit
    m = np.where(exact, np.rint(y), 0).astype(np.int64)
    carry = m >= 10**p  # 9.9999996 at 7 digits is 10.00000: the exponent grows by one
    m = np.where(carry, m // 10, m) * 10 ** (9 - p)  # 9 digits, trailing zeros
    X = e + carry  # the exponent %g decides by
    exact &= np.abs(X) < 100
    table = np.empty((n, _COLUMNS), dtype=np.uint8)
    groups = np.empty((3, n), dtype=np.int64)  # m's digits in threes, most significant first
    groups[0], low = np.divmod(m, 1_000_000)
    groups[1], groups[2] = np.divmod(low, 1000)
    table[:, :9] = _TRIPLES[groups.T].reshape(n, 9)
    zeros = _TRAILING[groups]  # (3, n) trailing zeros of each three (3 for 000)
    trailing = np.where(groups[2] > 0, zeros[2], 3 + np.where(groups[1] > 0, zeros[1], 3 + zeros[0]))
    s = np.where(m == 0, 1, 9 - trailing)  # the digits left once trailing zeros are stripped
    table[:, _DOT], table[:, _ZERO], table[:, _MINUS], table[:, _E] = (ord(c) for c in ".0-e")
    table[:, _EXP_SIGN] = np.where(X < 0, ord("-"), ord("+"))
    ax = np.abs(X) % 100
    table[:, _EXP_TENS] = ax // 10 + ord("0")
    table[:, _EXP_ONES] = ax % 10 + ord("0")
    table[:, _NUL] = 0
    fixed = (X >= -4) & (p > X)
    layout = np.where(fixed, np.clip(X, -4, 8) + 4, 13)
    key = ((flat < 0) * 15 + layout) * 10 + s
    slow = np.flatnonzero(nonzero & ~exact)
    text = _tokens(flat[slow]).astype("S") if slow.size else np.zeros(0, "S1")
    width = max(int(_LENGTHS[key].max()), text.itemsize)  # the longest text: the rest is padding
    if n < _RUNS_FROM:  # one gather through the layouts' columns
        out = table.ravel()[_LAYOUTS[key, :width] + np.arange(0, n * _COLUMNS, _COLUMNS)[:, None]]
    else:  # per layout present, a block copy of its rows (a run of a linear 16-bit sort)
        key = key.astype(np.int16)
        order = np.argsort(key, kind="stable")
        counts = np.bincount(key, minlength=len(_LAYOUTS))
        ends = np.cumsum(counts).tolist()
        out = np.empty((n, width), dtype=np.uint8)
        for layout_key in np.flatnonzero(counts).tolist():
            rows = order[ends[layout_key] - counts[layout_key] : ends[layout_key]]
            out[rows] = table[rows][:, _LAYOUTS[layout_key, :width]]
    out[~nonzero] = 0
    out[~nonzero, 0] = ord("0")
    if slow.size:
        out[slow] = 0
        out[slow, : text.itemsize] = text.view(np.uint8).reshape(slow.size, text.itemsize)
    return out


def float_text(value: float) -> str:
    """One number (a QC argument)."""
    return float_tokens(np.array([value]))[0][0]
