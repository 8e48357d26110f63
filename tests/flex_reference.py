"""A plain-Python model of the engine's flex rule interpreter, ``CStudioHdr::RunFlexRules`` (Source SDK
``public/studio.cpp``), written from its semantics to check the driver expressions against.

Like the engine: a zeroed stack of 32 floats per rule (every stored value rounded to float32), popped slots keep
their values, an op whose checks fail does nothing, the weight is slot 0, FETCH2 reads the weights written so far
(all zeroed before the first rule), EXP and the parse-only ops do nothing.
"""

from __future__ import annotations

import struct

STACK = 32


def f32(value: float) -> float:
    return struct.unpack("<f", struct.pack("<f", value))[0] if abs(value) < 3.4e38 else value


def remap_clamped(val: float, a: float, b: float, c: float, d: float) -> float:
    if a == b:
        return d if val >= b else c
    share = f32((val - a) / (b - a))
    share = min(max(share, 0.0), 1.0)
    return f32(c + f32((d - c) * share))


def _index(value: float) -> int | None:
    return int(value) if abs(value) < 2**31 else None  # C's (int) truncates toward zero


def run_flex_rules(
    rules: list[tuple[int, list[tuple[int, float]]]],
    controllers: list[tuple[float, float]],
    values: list[float],
    num_flexes: int,
) -> list[float]:
    """Every flex weight. ``controllers``: each controller's (min, max); ``values``: each controller's value."""
    dest = [0.0] * num_flexes
    count = len(controllers)
    src = [f32(v) for v in values]

    def valid(index: int | None) -> bool:
        return index is not None and 0 <= index < count

    for flex, ops in rules:
        if not 0 <= flex < num_flexes:
            continue
        stack = [0.0] * (STACK + 1)
        k = 0
        for op, value in ops:
            index = int(value) if op != 1 else 0
            if op == 1 and k < STACK:  # CONST
                stack[k], k = f32(value), k + 1
            elif op == 2 and k < STACK and valid(index):  # FETCH1
                stack[k], k = src[index], k + 1
            elif op == 3 and k < STACK and 0 <= index < num_flexes:  # FETCH2
                stack[k], k = dest[index], k + 1
            elif op in (4, 5, 6, 13, 14) and k >= 2:
                a, b = stack[k - 2], stack[k - 1]
                result = {4: a + b, 5: a - b, 6: a * b, 13: max(a, b), 14: min(a, b)}[op]
                stack[k - 2], k = f32(result), k - 1
            elif op == 7 and k >= 2:  # DIV
                stack[k - 2] = f32(stack[k - 2] / stack[k - 1]) if stack[k - 1] > 0.0001 else 0.0
                k -= 1
            elif op == 8 and k >= 1:  # NEG
                stack[k - 1] = -stack[k - 1]
            elif op == 18 and valid(index) and k >= index and (index != 0 or k < STACK):  # COMBO
                first = k - index
                for i in range(first + 1, k):
                    stack[first] = f32(stack[first] * stack[i])
                k = first + 1
            elif op == 19 and valid(index) and k >= index + 1:  # DOMINATE
                first = k - index
                dominant = stack[first]
                for i in range(first + 1, k):
                    dominant = f32(dominant * stack[i])
                stack[first - 1] = f32(stack[first - 1] * f32(1.0 - dominant))
                k -= index
            elif op == 15 and k < STACK and valid(index):  # 2WAY_0
                stack[k], k = remap_clamped(src[index], -1.0, 0.0, 1.0, 0.0), k + 1
            elif op == 16 and k < STACK and valid(index):  # 2WAY_1
                stack[k], k = remap_clamped(src[index], 0.0, 1.0, 0.0, 1.0), k + 1
            elif op == 17 and k >= 5 and valid(index):  # NWAY
                chosen = _index(stack[k - 1])
                if valid(chosen):
                    v = src[chosen]
                    x, y, z, w = stack[k - 5 : k - 1]
                    if v <= x or v >= w:
                        v = 0.0
                    elif v < y:
                        v = remap_clamped(v, x, y, 0.0, 1.0)
                    elif v > z:
                        v = remap_clamped(v, z, w, 1.0, 0.0)
                    else:
                        v = 1.0
                    stack[k - 5] = f32(v * src[index])
                    k -= 4
            elif op in (20, 21) and k >= 3 and valid(index):  # DME lower / upper eyelid
                named = [_index(stack[k - i]) for i in (1, 2, 3)]
                if all(valid(n) for n in named):

                    def share(i: int, lo: float, hi: float) -> float:
                        return remap_clamped(src[i], f32(controllers[i][0]), f32(controllers[i][1]), lo, hi)

                    close_v, close, up_down = share(index, 0, 1), share(named[0], 0, 1), share(named[2], -1, 1)
                    if op == 20:
                        factor = f32(1.0 - up_down) if up_down > 0.0 else 1.0
                        stack[k - 3] = f32(f32(factor * f32(1.0 - close_v)) * close)
                    else:
                        factor = f32(1.0 + up_down) if up_down < 0.0 else 1.0
                        stack[k - 3] = f32(f32(factor * close_v) * close)
                    k -= 2
            # anything else (EXP, parse-only, unknown, failed checks): nothing
        dest[flex] = stack[0]
    return dest
