"""A strict reader of SMD/VTA and a tokenizer of QC, following what studiomdl accepts (tests only): every line
of a section has exactly the fields it must, numbers parse and are finite, indices name existing nodes."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np


class SmdError(AssertionError):
    pass


@dataclass
class Smd:
    names: list[str] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    frames: dict[int, dict[int, list[float]]] = field(default_factory=dict)
    materials: list[str] = field(default_factory=list)
    corners: list[tuple] = field(default_factory=list)  # (parent, pos3, normal3, uv2, [(bone, weight)])
    vertex_frames: dict[int, dict[int, list[float]]] = field(default_factory=dict)


_NODE = re.compile(r'^\s*(\d+)\s+"([^"]*)"\s+(-?\d+)\s*$')


def _floats(parts: list[str], where: str) -> list[float]:
    try:
        values = [float(p) for p in parts]
    except ValueError as exc:
        raise SmdError(f"{where}: {exc}") from None
    if not all(math.isfinite(v) for v in values):
        raise SmdError(f"{where}: a non-finite number")
    return values


def read_smd(data: bytes) -> Smd:
    lines = data.decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    smd = Smd()
    i = 0

    def need(cond: bool, why: str) -> None:
        if not cond:
            raise SmdError(f"line {i + 1}: {why}: {lines[i] if i < len(lines) else '<eof>'!r}")

    need(lines[0].strip() == "version 1", "expected 'version 1'")
    i = 1
    while i < len(lines):
        section = lines[i].strip()
        i += 1
        if section == "nodes":
            while lines[i].strip() != "end":
                m = _NODE.match(lines[i])
                need(m is not None, "bad node line")
                need(int(m[1]) == len(smd.names), "node ids in order")
                parent = int(m[3])
                need(-1 <= parent < len(smd.names), "parent before child")
                smd.names.append(m[2])
                smd.parents.append(parent)
                i += 1
            i += 1
        elif section == "skeleton":
            time = None
            while lines[i].strip() != "end":
                parts = lines[i].split()
                if parts[0] == "time":
                    need(len(parts) == 2, "time N")
                    time = int(parts[1])
                    smd.frames[time] = {}
                else:
                    need(time is not None and len(parts) == 7, "bone px py pz rx ry rz")
                    bone = int(parts[0])
                    need(0 <= bone < len(smd.names), "a bone of the nodes")
                    smd.frames[time][bone] = _floats(parts[1:], f"line {i + 1}")
                i += 1
            i += 1
        elif section == "triangles":
            while lines[i].strip() != "end":
                material = lines[i].strip()
                need(material != "", "a material name")
                for _ in range(3):
                    i += 1
                    parts = lines[i].split()
                    need(len(parts) >= 9, "parent px py pz nx ny nz u v [links]")
                    parent = int(parts[0])
                    need(0 <= parent < len(smd.names), "parent bone")
                    numbers = _floats(parts[1:9], f"line {i + 1}")
                    links = []
                    if len(parts) > 9:
                        count = int(parts[9])
                        need(len(parts) == 10 + 2 * count, "links count")
                        for k in range(count):
                            bone = int(parts[10 + 2 * k])
                            need(0 <= bone < len(smd.names), "link bone")
                            links.append((bone, _floats([parts[11 + 2 * k]], f"line {i + 1}")[0]))
                    smd.corners.append((parent, numbers[:3], numbers[3:6], numbers[6:8], links))
                smd.materials.append(material)
                i += 1
            i += 1
        elif section == "vertexanimation":
            time = None
            while lines[i].strip() != "end":
                parts = lines[i].split("#")[0].split()
                if parts[0] == "time":
                    time = int(parts[1])
                    smd.vertex_frames[time] = {}
                else:
                    need(time is not None and len(parts) == 7, "index px py pz nx ny nz")
                    smd.vertex_frames[time][int(parts[0])] = _floats(parts[1:], f"line {i + 1}")
                i += 1
            i += 1
        else:
            need(False, "unknown section")
    return smd


def corner_arrays(smd: Smd) -> dict[str, np.ndarray]:
    pos = np.array([c[1] for c in smd.corners], dtype=np.float64).reshape(-1, 3)
    nrm = np.array([c[2] for c in smd.corners], dtype=np.float64).reshape(-1, 3)
    uv = np.array([c[3] for c in smd.corners], dtype=np.float64).reshape(-1, 2)
    return {"positions": pos, "normals": nrm, "uvs": uv}


# --- QC -------------------------------------------------------------------------------------------------------------


def qc_tokens(text: str) -> list[str]:
    """The SDK tokenizer's view: whitespace splits; ``"..."`` one token (no escape, no line break inside);
    ``//``, ``#``, ``;`` comment to the end of line; ``/* */`` comments; braces are tokens. Raises on an unclosed
    quote or comment, or a byte above ASCII in a bare token."""
    tokens, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i) or c in "#;":
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise SmdError("unclosed /* comment")
            i = j + 2
        elif c == '"':
            j = text.find('"', i + 1)
            if j < 0 or "\n" in text[i + 1 : j]:
                raise SmdError(f"unclosed quote at {i}")
            tokens.append(text[i + 1 : j])
            i = j + 1
        elif c in "{}":
            tokens.append(c)
            i += 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in '"{};' and not text.startswith("//", j):
                if ord(text[j]) > 127:
                    raise SmdError(f"a non-ASCII character in a bare token at {j}")
                j += 1
            tokens.append(text[i:j])
            i = j
    depth = 0
    for t in tokens:
        depth += (t == "{") - (t == "}")
        if depth < 0:
            raise SmdError("unbalanced braces")
    if depth:
        raise SmdError("unbalanced braces")
    return tokens


def qc_commands(text: str) -> list[list]:
    """Commands: a ``$word`` and its tokens up to the next ``$`` command at brace depth 0 (blocks kept as lists)."""
    tokens = qc_tokens(text)
    commands: list[list] = []
    depth = 0
    for t in tokens:
        if depth == 0 and t.startswith("$"):
            commands.append([t])
        elif commands:
            commands[-1].append(t)
        depth += (t == "{") - (t == "}")
    return commands
