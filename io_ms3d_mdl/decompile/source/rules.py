"""Flex rules back to QC ``%name = expression`` lines, from the rule bytecode (a reverse-polish program:
``formats.source.model.MdlFlexRule``). Operations QC has no word for (the n-way and eyelid ones) are written as a
comment, with a warning in the QC, instead of a wrong rule."""

from __future__ import annotations

import numpy as np

from ...formats.float_text import float_text, float_tokens
from ...formats.qc import qc_token
from ...formats.source.model import MdlFile

CONST, FETCH1, FETCH2, ADD, SUB, MUL, DIV, NEG = 1, 2, 3, 4, 5, 6, 7, 8
MAX, MIN, TWO_WAY_0, TWO_WAY_1, NWAY, COMBO, DOMINATE = 13, 14, 15, 16, 17, 18, 19
BINARY = {ADD: ("+", 1), SUB: ("-", 1), MUL: ("*", 2), DIV: ("/", 2)}


def _name(text: str) -> str:
    """A controller or flex name inside an expression: bare when the tokenizer keeps it whole."""
    token = qc_token(text)
    return token


def rule_expression(mdl: MdlFile, ops: list[tuple[int, float]], constants: list[str] | None = None) -> str | None:
    """``constants``: the text of each constant of ``ops``, in order, when formatted already (``rule_lines``)."""
    stack: list[tuple[str, int]] = []  # (text, binding strength: 3 atom, 2 product, 1 sum)
    controllers = [c[0] for c in mdl.flex_controllers]
    texts = iter(constants) if constants is not None else None

    def pop() -> tuple[str, int]:
        if not stack:
            raise IndexError
        return stack.pop()

    try:
        for op, value in ops:
            if op == CONST:
                text = next(texts) if texts is not None else float_text(value)
                stack.append((f"({text})" if text.startswith("-") else text, 3))
            elif op == FETCH1:
                stack.append((_name(controllers[int(value)]), 3))
            elif op == FETCH2:
                stack.append((_name(mdl.flex_names[int(value)]), 3))
            elif op in BINARY:
                sign, bind = BINARY[op]
                b, a = pop(), pop()
                left = a[0] if a[1] >= bind else f"({a[0]})"
                right = b[0] if b[1] > bind or (b[1] == bind and op in (ADD, MUL)) else f"({b[0]})"
                stack.append((f"{left} {sign} {right}", bind))
            elif op == NEG:
                a = pop()
                stack.append((f"-{a[0]}" if a[1] == 3 else f"-({a[0]})", 3))
            elif op in (MAX, MIN):
                b, a = pop(), pop()
                stack.append((f"{'max' if op == MAX else 'min'}({a[0]}, {b[0]})", 3))
            elif op == TWO_WAY_0:
                c = _name(controllers[int(value)])
                stack.append((f"min(max(-{c}, 0), 1)", 3))
            elif op == TWO_WAY_1:
                c = _name(controllers[int(value)])
                stack.append((f"min(max({c}, 0), 1)", 3))
            elif op == COMBO:
                n = int(value)
                terms = [pop() for _ in range(n)][::-1]
                stack.append((" * ".join(t[0] if t[1] >= 2 else f"({t[0]})" for t in terms), 2))
            elif op == DOMINATE:
                n = int(value)
                terms = [pop() for _ in range(n + 1)][::-1]
                product = " * ".join(t[0] if t[1] >= 2 else f"({t[0]})" for t in terms[:-1])
                stack.append((f"{product} * (1 - {terms[-1][0]})", 2))
            else:
                return None
    except (IndexError, ValueError, OverflowError):
        return None
    return stack[-1][0] if len(stack) == 1 else None


def rule_lines(mdl: MdlFile) -> list[str]:
    """Every rule's line. The constants of all rules are formatted in one pass: one call per constant took 160 µs,
    and 120,000 constants (inside the flex rule budget) took 20 s."""
    rules = [rule for rule in mdl.flex_rules if 0 <= rule.flex < len(mdl.flex_names)]
    per_rule = [[value for op, value in rule.ops if op == CONST] for rule in rules]
    flat = [value for values in per_rule for value in values]
    texts = float_tokens(np.array(flat, dtype=np.float64))[0].tolist() if flat else []
    lines, start = [], 0
    for rule, values in zip(rules, per_rule, strict=True):
        constants, start = texts[start : start + len(values)], start + len(values)
        expression = rule_expression(mdl, rule.ops, constants)
        name = _name(mdl.flex_names[rule.flex])
        if expression is None:
            lines.append(f"// %{mdl.flex_names[rule.flex]}: a rule QC cannot express (n-way or eyelid operation)")
        else:
            lines.append(f"%{name} = {expression}")
    return lines


def own_rule(flex: str) -> str:
    """The rule of a flex made in Blender: driven by the controller of its own name."""
    return f"%{_name(flex)} = {_name(flex)}"
