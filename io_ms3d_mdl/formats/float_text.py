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
_LOG10_2 = float(np.log10(2.0))  # (e × this is never within rounding of an integer for a float32's e)
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
    return _scaled(flat)[3]


def _scaled(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per value: its magnitude in float64 (1 for a zero), whether it is non-zero, its decimal exponent (0 for a
    zero) and ``digits_needed``. Powers of ten come from a table of ``10.0 ** k`` (the very same numbers), the
    float32 step from the bits of the value below (the smaller step, at a power of two)."""
    a = np.abs(flat)
    nonzero = a > 0
    x = a.astype(np.float64)
    np.copyto(x, 1.0, where=~nonzero)
    # floor(log10 x) from the binary exponent (exact: every float32 is a normal float64), which gives it or one
    # less (log10 of the mantissa is below log10 2), then one step up where the next power is not above x (no
    # float32 lies between a power of ten and the float64 nearest it: checked around every one)
    e = (x.view(np.int64) >> 52) - 1023
    e = np.floor(e * _LOG10_2).astype(np.int64)
    e += _POWERS.take(e + (1 - _POWERS_FROM)) <= x
    below = a.view(np.uint32) - nonzero  # the float32 below the value (0 stays 0)
    below >>= 23
    np.maximum(below, 1, out=below)  # its biased exponent (a subnormal's step is the smallest normal's)
    limit = np.ldexp(SAFE, below.astype(np.int32) - 150)  # SAFE × that step
    need = np.full(flat.shape, 9, dtype=np.int8)
    for p in reversed(PRECISIONS):
        scale = _POWERS.take((p - 1 - _POWERS_FROM) - e)
        rounded = x * scale
        np.round(rounded, out=rounded)
        rounded /= scale
        rounded -= x
        np.putmask(need, np.abs(rounded, out=rounded) < limit, p)
    need[~nonzero] = 6
    e[~nonzero] = 0
    return x, nonzero, e, need


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


# The table's columns as laid out in memory: digit d at (d // 3) * 4 + d % 3 (each three digits one uint32 of
# _WORDS), the point, zero and minus in those words' fourth bytes, the exponent's four (_EXPONENTS) after them.
_PLACES = np.array([(d // 3) * 4 + d % 3 for d in range(9)] + [3, 7, 11, 12, 13, 14, 15, 16])
_TABLE_BYTES = 20  # (five uint32 a row)
_LAYOUTS = _layouts().reshape(-1, WIDTH)  # row (neg * 15 + layout) * 10 + s
_LENGTHS = (_LAYOUTS != _NUL).sum(axis=1)
_PLACED = _PLACES[_LAYOUTS].astype(np.intp)
# its first w columns, per w, contiguous: a row per value is one ``take`` (a fancy index of rows and a slice cost four
# times as much), and ``intp`` so that the gather it leads to converts nothing
_PLACED_BY_WIDTH = [np.ascontiguousarray(_PLACED[:, :w]) for w in range(WIDTH + 1)]
_TRIPLES = np.zeros((1000, 4), dtype=np.uint8)
_TRIPLES[:, :3] = np.array([f"{i:03d}".encode() for i in range(1000)]).view(np.uint8).reshape(1000, 3)
_TRIPLES = _TRIPLES.view(np.uint32).ravel()  # "000".."999" as the bytes of a uint32, the fourth 0
# the same with the point, the zero and the minus in their fourth bytes (digits 0-2, 3-5, 6-8 of a row's table)
_WORDS = np.repeat(_TRIPLES.view(np.uint8).reshape(1, 1000, 4), 3, axis=0)
_WORDS[:, :, 3] = np.frombuffer(b".0-", dtype=np.uint8)[:, None]
_WORDS = _WORDS.view(np.uint32).reshape(3, 1000)
# the exponent's four bytes (e, sign, tens, ones) for each exponent -99..99
_EXPONENTS = np.array([f"e{x:+03d}".encode() for x in range(-99, 100)]).view(np.uint32)
_TRAILING = np.array([3] + [len(f"{i:03d}") - len(f"{i:03d}".rstrip("0")) for i in range(1, 1000)], dtype=np.int8)
_POWERS_FROM = -80  # _POWERS[k - _POWERS_FROM] is 10.0 ** k
_POWERS = 10.0 ** np.arange(_POWERS_FROM, 81)
_INTEGER_POWERS = 10 ** np.arange(10, dtype=np.int64)
BLOCK = 1 << 15  # values formatted at a time (their temporaries stay in the cache)


def float_chars(values: np.ndarray, dedupe: bool = True) -> tuple[np.ndarray, int]:
    """The text of each value (flattened, in order) as rows of ASCII bytes, 0-padded to the longest (at most
    ``WIDTH``), and how many non-finite values were written as 0: the same text
    as ``float_tokens``, built with numpy arithmetic (the digits of the value scaled to an integer), so a million
    numbers cost milliseconds. A value whose scaled digits float64 cannot settle (a near-tie, or a scale beyond
    10^±22) is formatted by ``%`` instead, so the text is exactly ``%.{p}g``'s. ``dedupe``: format each
    distinct value once when fewer than half are (the sort that finds them costs about what formatting does)."""
    a, bad = finite32(values)
    flat = a.ravel()
    if dedupe and flat.size > 1024:
        unique, inverse = _unique(flat)
        if unique.size < flat.size // 2:
            return _chars(unique)[inverse], bad
    return _chars(flat), bad


def _unique(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(flat, return_inverse=True)`` for finite float32 without -0, sorted by bit pattern instead. The
    order among equal values does not matter here, so numpy's default (unstable) sort: on a mesh's 43,000 numbers
    1.2 ms where the stable one took 2.6 (and 47 against 120 ms on a million random values; only input already in
    order sorts faster stably)."""
    bits = flat.view(np.uint32)
    order = np.argsort(bits)
    ordered = bits[order]
    first = np.empty(flat.size, dtype=bool)
    first[:1] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    inverse = np.empty(flat.size, dtype=np.intp)
    inverse[order] = np.cumsum(first) - 1
    return ordered[first].view(np.float32), inverse


def _chars(flat: np.ndarray) -> np.ndarray:
    n = flat.size
    if n > BLOCK:
        blocks = [_chars(flat[start : start + BLOCK]) for start in range(0, n, BLOCK)]
        out = np.zeros((n, max(block.shape[1] for block in blocks)), dtype=np.uint8)
        for start, block in zip(range(0, n, BLOCK), blocks, strict=True):
            out[start : start + len(block), : block.shape[1]] = block
        return out
    if n == 0:
        return np.zeros((0, WIDTH), dtype=np.uint8)
    x, nonzero, e, p = _scaled(flat)
    p = p.astype(np.int64)
    k = p - 1 - e
    exact = nonzero & (np.abs(k) <= 22)
    k[~exact] = 0
    y = x * _POWERS.take(k - _POWERS_FROM)  # one rounding: half an ulp
    up = k < 0
    if up.any():  # (divided by the exact power, as %g's digits are of the value itself)
        y[up] = x[up] / _POWERS.take(-k[up] - _POWERS_FROM)
    exact &= np.abs(y - np.floor(y) - 0.5) > 1e-6  # not a near-tie, where that half ulp could tip the digit
    np.rint(y, out=y)
    y[~exact] = 0
    m = y.astype(np.int64)
    carry = m >= _INTEGER_POWERS.take(p)  # 9.9999996 at 7 digits is 10.00000: the exponent grows by one
    if carry.any():
        m[carry] //= 10
    m *= _INTEGER_POWERS.take(9 - p)  # 9 digits, trailing zeros
    X = e + carry  # the exponent %g decides by
    exact &= np.abs(X) < 100
    groups = np.divmod(m.astype(np.int32), np.int32(1_000_000))  # m's digits in threes, most significant first
    groups = (groups[0], *np.divmod(groups[1], np.int32(1000)))  # (int32: m < 10⁹, and its division is cheaper)
    table = np.empty((n, _TABLE_BYTES), dtype=np.uint8)
    words = table.view(np.uint32)
    for g, digits in enumerate(groups):  # each three digits with the point, the zero or the minus after them
        _WORDS[g].take(digits, out=words[:, g], mode="clip")  # (clip: in range, and not buffered)
    _EXPONENTS.take(X + 99, out=words[:, 3], mode="clip")  # (|X| ≥ 100 is not exact: formatted by %)
    words[:, 4] = 0
    zeros = [_TRAILING.take(digits) for digits in groups]  # trailing zeros of each three (3 for 000)
    trailing = np.where(groups[2] > 0, zeros[2], 3 + np.where(groups[1] > 0, zeros[1], 3 + zeros[0]))
    s = np.where(m == 0, 1, 9 - trailing)  # the digits left once trailing zeros are stripped
    fixed = (X >= -4) & (p > X)
    layout = np.where(fixed, np.clip(X, -4, 8) + 4, 13)
    key = ((flat < 0) * 15 + layout) * 10 + s
    slow = np.flatnonzero(nonzero & ~exact)
    text = _tokens(flat[slow]).astype("S") if slow.size else np.zeros(0, "S1")
    width = max(int(_LENGTHS.take(key).max()), text.itemsize)  # the longest text: the rest is padding
    where = _PLACED_BY_WIDTH[width].take(key, axis=0)  # each byte's place in the table, made absolute in place
    where += np.arange(0, n * _TABLE_BYTES, _TABLE_BYTES, dtype=np.intp)[:, None]
    out = table.ravel().take(where)
    out[~nonzero] = 0
    out[~nonzero, 0] = ord("0")
    if slow.size:
        out[slow] = 0
        out[slow, : text.itemsize] = text.view(np.uint8).reshape(slow.size, text.itemsize)
    return out


def float_text(value: float) -> str:
    """One number (a QC argument)."""
    return float_tokens(np.array([value]))[0][0]
