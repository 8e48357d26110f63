"""Source flex rules as Blender driver expressions that compute what the engine computes (notes §1.8).

A flex rule is a reverse-polish program that ``CStudioHdr::RunFlexRules`` (Source SDK ``public/studio.cpp``) runs
on a fixed stack of 32 floats to turn controller values into one flex weight. The program is run here once,
symbolically: every stack slot holds the expression of its value, so the rule's weight becomes a single expression
over controllers. The engine's quirks are kept, because they decide the weight:

* the stack starts zeroed, popped slots keep their old value, and the weight is slot 0 whatever is left above it;
* an op whose operands fail the engine's checks (too few values, no room, an index out of range) does nothing;
* EXP (9) and the parse-only ops (10-12) do nothing: the engine has no case for them;
* FETCH2 reads the weight that an *earlier* rule gave a flex (0 when none did yet);
* DIV yields 0 unless the denominator is above 0.0001;
* 2-way sliders remap -1..0 and 0..1, n-way ramps read four values and a controller index from the stack, and the
  eyelid ops remap three controllers, named by stack values, through their min..max ranges.

Expressions use only what Blender's Python-free "simple expression" evaluator accepts (arithmetic, comparisons,
``a if c else b``, ``min``, ``max``, ``clamp``), so drivers run fast and without the auto-run security prompt, and
they are written compactly (controllers ``c<index>``, other flexes' weights ``k<descriptor>``) to fit Blender's 255
bytes. A rule whose controller index is computed at run time cannot be said as one expression; it is not stated.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Mapping
from functools import lru_cache

import numpy as np

STACK = 32  # STUDIO_FLEX_STACK
CONST, FETCH1, FETCH2, ADD, SUB, MUL, DIV, NEG, EXP = range(1, 10)
MAX, MIN, TWO_WAY_0, TWO_WAY_1, NWAY, COMBO, DOMINATE, LOWER_EYELID, UPPER_EYELID = range(13, 22)
DIV_THRESHOLD = 0.0001  # the engine divides only by more than this
LONGEST_TERM = 4096  # characters: any longer and the rule could never fit a driver

# How tightly a term's text binds, so that parentheses appear only where Python's grammar needs them.
# LOW: comparisons and "a if c else b".
LOW, SUM, PRODUCT, UNARY, ATOM = range(5)

Use = tuple[str, str, int]  # (variable, kind, index): ("c3", "controller", 3), ("k7", "flex", 7), ("w9", "stored", 9)
Controller = tuple[str, str, float, float]  # (name, type, min, max) as MdlFile.flex_controllers holds them


class Unstated(Exception):
    """The rule cannot be said as one simple expression."""


class Term:
    """One value: its expression text, how tightly the text binds, its float32 value when it is a constant, and the
    variables it reads. Never changed once made (hashed as a memo key). A constant finds its text only when an
    expression needs it: most constants are folded into others, and finding a float's shortest text is what most
    of a rule of constants cost. A plain class with slots: a frozen dataclass made every term three times as slow
    to make."""

    __slots__ = ("_text", "binds", "const", "uses")

    def __init__(
        self, text: str | None, binds: int = ATOM, const: float | None = None, uses: frozenset[Use] = frozenset()
    ) -> None:
        # Ramps and remaps repeat their operands, so a crafted rule nesting them would grow its text exponentially;
        # far past the 255 bytes Blender keeps, stop (the rule is counted as not driven).
        if text is not None and len(text) > LONGEST_TERM:
            raise Unstated
        self._text, self.binds, self.const, self.uses = text, binds, const, uses

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = _shortest(_F32.pack(self.const))
        return self._text

    def _key(self) -> tuple:
        return (self.const, self.binds) if self.const is not None else (self._text, self.binds, self.uses)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Term) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Term({self.text!r}, {self.binds}, {self.const}, {set(self.uses)})"


_F32 = struct.Struct("<f")


def f32(value: float) -> float:
    """The engine keeps every stack value in a 32-bit float (rounded to nearest, as a C cast does; past the
    largest float32, infinity). ``struct``, not a numpy scalar under ``errstate``: this runs for every constant
    of every rule, and numpy's error-state switch cost most of a rule's time."""
    try:
        return _F32.unpack(_F32.pack(value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def number(value: float) -> Term:
    value = f32(value)
    if not math.isfinite(value):
        raise Unstated  # no literal for it that Blender reads
    return Term(None, UNARY if math.copysign(1.0, value) < 0 else ATOM, value)  # "-0" binds like "-1"


@lru_cache(maxsize=1 << 14)
def _shortest(packed: bytes) -> str:
    """The shortest text that reads back as the same float32 (by its bytes, so 0.0 and -0.0 differ); cached, as
    rules repeat a few constants (0, 1, ramp ends) thousands of times."""
    text = str(np.float32(_F32.unpack(packed)[0]))
    return text[:-2] if text.endswith(".0") else text


ZERO, ONE, TWO = number(0.0), number(1.0), number(2.0)


def controller(index: int) -> Term:
    name = f"c{index}"
    return Term(name, uses=frozenset({(name, "controller", index)}))


def flex_weight(desc: int) -> Term:
    """Another flex's weight, read from its shape key."""
    name = f"k{desc}"
    return Term(name, uses=frozenset({(name, "flex", desc)}))


def stored_weight(rule: int) -> Term:
    """The weight a rule left, read from the intermediate property that rule drives."""
    name = f"w{rule}"
    return Term(name, uses=frozenset({(name, "stored", rule)}))


def _wrap(term: Term, binds: int) -> str:
    return term.text if term.binds >= binds else f"({term.text})"


def _operator(a: Term, sign: str, b: Term, binds: int, fold: Callable[[float, float], float]) -> Term:
    if a.const is not None and b.const is not None:
        return number(fold(a.const, b.const))
    return Term(f"{_wrap(a, binds)}{sign}{_wrap(b, binds + 1)}", binds, None, a.uses | b.uses)


def add(a: Term, b: Term) -> Term:
    if b.const == 0.0:
        return a
    if a.const == 0.0:
        return b
    return _operator(a, "+", b, SUM, lambda x, y: x + y)


def sub(a: Term, b: Term) -> Term:
    if b.const == 0.0:
        return a
    if a.const is None and b.const is not None and b.const < 0:
        return Term(f"{_wrap(a, SUM)}+{number(-b.const).text}", SUM, None, a.uses)
    return _operator(a, "-", b, SUM, lambda x, y: x - y)


def mul(a: Term, b: Term) -> Term:
    if a.const == 0.0 or b.const == 0.0:
        return ZERO
    if b.const == 1.0:
        return a
    if a.const == 1.0:
        return b
    return _operator(a, "*", b, PRODUCT, lambda x, y: x * y)


def quotient(a: Term, b: Term) -> Term:
    """A plain division, for denominators known not to be 0."""
    return a if b.const == 1.0 else _operator(a, "/", b, PRODUCT, lambda x, y: x / y)


def guarded_div(a: Term, b: Term) -> Term:
    """STUDIO_DIV: a / b when b > 0.0001, else 0 (a plain division would stop the driver at 0/0)."""
    if b.const is not None:
        return quotient(a, b) if b.const > DIV_THRESHOLD else ZERO
    if a.const == 0.0:
        return ZERO
    return choose(compare(b, ">", number(DIV_THRESHOLD)), quotient(a, b), ZERO)


def neg(a: Term) -> Term:
    if a.const is not None:
        return number(-a.const)
    return Term(f"-{_wrap(a, ATOM)}", UNARY, None, a.uses)


def call(name: str, fold: Callable[..., float], *args: Term) -> Term:
    if all(a.const is not None for a in args):
        return number(fold(*(a.const for a in args)))
    uses = frozenset().union(*(a.uses for a in args))
    return Term(f"{name}({','.join(_wrap(a, SUM) for a in args)})", ATOM, None, uses)


def clamp01(a: Term) -> Term:
    return call("clamp", lambda x, lo, hi: min(max(x, lo), hi), a, ZERO, ONE)


def compare(a: Term, sign: str, b: Term) -> Term:
    """A condition (only ever used as the test of :func:`choose`)."""
    return Term(f"{_wrap(a, SUM)}{sign}{_wrap(b, SUM)}", LOW, None, a.uses | b.uses)


def choose(test: Term, yes: Term, no: Term) -> Term:
    """``yes if test else no``; Blender evaluates only the branch taken, so a branch may divide by 0."""
    text = f"{_wrap(yes, SUM)} if {test.text} else {_wrap(no, SUM)}"
    return Term(text, LOW, None, test.uses | yes.uses | no.uses)


def either(a: Term, b: Term) -> Term:
    return Term(f"{a.text} or {b.text}", LOW, None, a.uses | b.uses)


def remap_clamped(v: Term, a: Term, b: Term, c: Term, d: Term) -> Term:
    """RemapValClamped: v's place in a..b, clamped to 0..1, mapped onto c..d; a step at b when a == b."""
    if a.const is not None and b.const is not None:
        if a.const == b.const:
            if v.const is not None:
                return d if v.const >= b.const else c
            return choose(compare(v, ">=", b), d, c)
        share = clamp01(quotient(sub(v, a), sub(b, a)))
        span = sub(d, c)
        return sub(c, share) if span.const == -1.0 else add(c, mul(span, share))
    share = clamp01(quotient(sub(v, a), sub(b, a)))
    return choose(compare(a, "!=", b), add(c, mul(sub(d, c), share)), choose(compare(v, ">=", b), d, c))


def nway(value: Term, scale: Term, x: Term, y: Term, z: Term, w: Term) -> Term:
    """STUDIO_NWAY: the value controller through the ramp x < y .. z < w (0 outside, 1 on the plateau), times the
    op's own controller."""
    ramp = (x.const, y.const, z.const, w.const)
    if None not in ramp and ramp[0] < ramp[1] <= ramp[2] < ramp[3]:
        # Both slopes at once: the rise and the fall are each above 1 on the other side of the plateau.
        rise = quotient(sub(value, x), sub(y, x))
        fall = quotient(sub(w, value), sub(w, z))
        return mul(clamp01(call("min", min, rise, fall)), scale)
    inner = choose(
        compare(value, "<", y),
        remap_clamped(value, x, y, ZERO, ONE),
        choose(compare(value, ">", z), remap_clamped(value, z, w, ONE, ZERO), ONE),
    )
    return mul(choose(either(compare(value, "<=", x), compare(value, ">=", w)), ZERO, inner), scale)


def _remap_controller(index: int, controllers: list[Controller], memo: dict | None = None) -> Term:
    """A controller's place in its own min..max, clamped to 0..1."""
    term = None if memo is None else memo.get(("remap", index))
    if term is None:
        _name, _kind, lo, hi = controllers[index]
        term = remap_clamped(controller(index), number(lo), number(hi), ZERO, ONE)
        if memo is not None:
            memo["remap", index] = term
    return term


def eyelid(
    op: int, close_v: int, close: int, up_down: int, controllers: list[Controller], memo: dict | None = None
) -> Term:
    """STUDIO_DME_LOWER/UPPER_EYELID. With n the eyes' up/down share in 0..1 (up/down = 2n - 1): the lower lid
    closes by (1 - CloseLidV) * CloseLid, less by 1 - up/down while the eyes look up; the upper by
    CloseLidV * CloseLid, less by 1 + up/down while they look down."""
    lid_v = _remap_controller(close_v, controllers, memo)
    lid = _remap_controller(close, controllers, memo)
    n = _remap_controller(up_down, controllers, memo)
    if op == LOWER_EYELID:
        return mul(mul(call("min", min, sub(TWO, mul(TWO, n)), ONE), sub(ONE, lid_v)), lid)
    return mul(mul(call("min", min, mul(TWO, n), ONE), lid_v), lid)


def _index(term: Term) -> int | None:
    """``(int)`` of a stack value that names a controller; the value must be known before the rule runs."""
    if term.const is None:
        raise Unstated  # the controller would be chosen at run time
    return int(term.const) if abs(term.const) < 2**31 else None


def _controller_indices(terms: list[Term], count: int) -> list[int] | None:
    """The controllers that stack values name, checked in the engine's order; None when one is out of range."""
    out = []
    for term in terms:
        index = _index(term)
        if index is None or not 0 <= index < count:
            return None
        out.append(index)
    return out


def _fetch(op: int, index: int) -> Term:
    """FETCH1 and the 2-way sliders: a controller, or its -1..0 or 0..1 half remapped."""
    term = controller(index)
    if op == TWO_WAY_0:
        return remap_clamped(term, number(-1.0), ZERO, ONE, ZERO)
    if op == TWO_WAY_1:
        return remap_clamped(term, ZERO, ONE, ZERO, ONE)
    return term


# What each operation costs the interpreter, in units of the flex rule budget (budget.py), measured: a constant
# (its shortest text), a ramp, an eyelid or a product over the stack build that many terms (about 2 µs a unit).
EXTRA_COST = {CONST: 2, DIV: 1, TWO_WAY_0: 6, TWO_WAY_1: 6, NWAY: 40, LOWER_EYELID: 32, UPPER_EYELID: 32}


def rule_cost(ops: list[tuple[int, float]]) -> int:
    """Budget units of one run of a rule: one per operation and per rule, more for the operations that build many
    terms (COMBO and DOMINATE multiply as many stack values as their operand says, at most the stack)."""
    cost = 1 + len(ops)
    for op, value in ops:
        if op in EXTRA_COST:
            cost += EXTRA_COST[op]
        elif op in (COMBO, DOMINATE):
            cost += min(max(int(value), 0), STACK)
    return cost


BINARY: dict[int, Callable[[Term, Term], Term]] = {
    ADD: add,
    SUB: sub,
    MUL: mul,
    DIV: guarded_div,
    MAX: lambda a, b: call("max", max, a, b),
    MIN: lambda a, b: call("min", min, a, b),
}


def rule_term(
    ops: list[tuple[int, float]],
    controllers: list[Controller],
    num_flexes: int,
    weights: Mapping[int, Term | None] | None = None,
    memo: dict | None = None,
) -> Term | None:
    """The rule's weight as a term, or None when it cannot be stated. ``weights``: the weight each flex holds when
    this rule runs (a term, or None when that weight could not be stated); a flex not in it holds 0. ``memo``:
    terms of controller remaps and eyelids already built for these ``controllers`` (shared between the rules of
    a model: a face repeats them in every rule, and each costs dozens of terms)."""
    weights = weights or {}
    memo = {} if memo is None else memo
    count = len(controllers)
    stack = [ZERO] * (STACK + 1)  # one slot more: a dominate over 0 values reads the slot above a full stack
    k = 0
    try:
        for op, value in ops:
            index = int(value) if op != CONST else 0
            if op == CONST and k < STACK:
                stack[k], k = number(value), k + 1
            elif op in (FETCH1, TWO_WAY_0, TWO_WAY_1) and k < STACK and 0 <= index < count:
                term = memo.get((op, index))
                if term is None:
                    term = memo[op, index] = _fetch(op, index)
                stack[k], k = term, k + 1
            elif op == FETCH2 and k < STACK and 0 <= index < num_flexes:
                weight = weights.get(index, ZERO)
                if weight is None:
                    raise Unstated
                stack[k], k = weight, k + 1
            elif op in BINARY and k >= 2:
                stack[k - 2], k = BINARY[op](stack[k - 2], stack[k - 1]), k - 1
            elif op == NEG and k >= 1:
                stack[k - 1] = neg(stack[k - 1])
            elif op == COMBO and 0 <= index < count and k >= index and (index or k < STACK):
                first = k - index
                for i in range(first + 1, k):
                    stack[first] = mul(stack[first], stack[i])
                k = first + 1
            elif op == DOMINATE and 0 <= index < count and k >= index + 1:
                first = k - index
                dominant = stack[first]
                for i in range(first + 1, k):
                    dominant = mul(dominant, stack[i])
                stack[first - 1] = mul(stack[first - 1], sub(ONE, dominant))
                k -= index
            elif op == NWAY and k >= 5 and 0 <= index < count:
                chosen = _index(stack[k - 1])
                if chosen is not None and 0 <= chosen < count:
                    stack[k - 5] = nway(controller(chosen), controller(index), *stack[k - 5 : k - 1])
                    k -= 4
            elif op in (LOWER_EYELID, UPPER_EYELID) and k >= 3 and 0 <= index < count:
                named = _controller_indices([stack[k - 1], stack[k - 2], stack[k - 3]], count)
                if named is not None:
                    key = (op, index, named[0], named[2])
                    term = memo.get(key)
                    if term is None:
                        term = memo[key] = eyelid(op, index, named[0], named[2], controllers, memo)
                    stack[k - 3], k = term, k - 2
            # else: EXP, the parse-only ops, unknown ops and ops failing the engine's checks do nothing
    except Unstated:
        return None
    return stack[0]
