"""A strict reader of SMD and VTA files (``version 1``), stricter than ``studiomdl``: what it accepts, studiomdl
reads the way it looks, and its arrays are what the tests compare.

Rules (learnt from the format as studiomdl reads it; no code taken):
- ``version 1`` first; then the blocks ``nodes``, ``skeleton``, and ``triangles`` or ``vertexanimation``, each closed
  by ``end``. A block's keyword is its whole line, with no spaces around it (Blender Source Tools' importer compares
  whole lines, ``line == "nodes\\n"``). A file that stops inside a block is truncated: an error.
- ``nodes``: ``index "name" parent``, indices 0, 1, 2, ... in order, names quoted (so no ``"`` inside), unique,
  each parent -1 or an earlier node.
- ``skeleton``: ``time N`` with N increasing, then ``bone px py pz rx ry rz`` lines, each bone at most once a frame;
  the first frame poses every bone (in a VTA the frames may be empty: they only number its shapes).
- ``triangles``: a material line, then exactly three vertex lines ``bone px py pz nx ny nz u v`` with optionally
  ``count (bone weight)*count``; bones are known nodes, weights positive and summing to 1 (within 1e-3).
- ``vertexanimation``: ``time N`` then ``vertex px py pz nx ny nz``; frame 0 is the base.
- Numbers are plain decimals (``-1.5``, ``2e-05``): ``nan``/``inf`` in any spelling are errors; integers are integers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

FLOAT = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
INT = r"[-+]?\d+"
NODE = re.compile(rf'^\s*({INT})\s+"([^"]*)"\s+({INT})\s*$')
POSE = re.compile(rf"^\s*({INT})" + rf"\s+({FLOAT})" * 6 + r"\s*$")
TIME = re.compile(rf"^\s*time\s+({INT})\s*(?:(?:#|;|//)(.*))?$")  # a VTA names its shape after a comment
VERTEX_HEAD = re.compile(rf"^\s*({INT})" + rf"\s+({FLOAT})" * 8 + r"(.*)$")
FLOAT_ONLY = re.compile(rf"^{FLOAT}$")


class SmdError(ValueError):
    """The file breaks the rules above; the message names the file and line."""


@dataclass
class Smd:
    names: list[str]
    parents: np.ndarray  # (bones,) int
    frames: dict[int, dict[int, np.ndarray]] = field(default_factory=dict)  # time -> bone -> (6,) pos + euler
    materials: list[str] = field(default_factory=list)  # one per triangle
    vertices: np.ndarray | None = None  # (triangles*3, 8) pos, normal, uv
    weights: list[list[tuple[int, float]]] = field(default_factory=list)  # per vertex: (bone, weight)
    shapes: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)  # VTA time -> (indices, (n,6))

    def pose(self, time: int) -> np.ndarray:
        """Every bone's (6,) pose at ``time``, bones a frame omits kept from the frame before (as studiomdl does)."""
        times = sorted(t for t in self.frames if t <= time)
        result = np.full((len(self.names), 6), np.nan)
        for t in times:
            for bone, values in self.frames[t].items():
                result[bone] = values
        return result


def read(path: Path) -> Smd:
    return parse(path.read_bytes(), str(path))


def parse(data: bytes, name: str = "SMD") -> Smd:
    lines = [_text(line) for line in data.split(b"\n")]  # each name as stored: UTF-8, else Latin-1, line by line
    if lines and lines[-1] == "":
        lines.pop()
    else:
        raise SmdError(f"{name}: the last line has no newline (a truncated file?)")
    state = _State(name, [line.removesuffix("\r") for line in lines])  # universal newlines, as Python reads it
    state.expect_line("version 1")
    smd = Smd([], np.zeros(0, int))
    seen: set[str] = set()
    while state.more():
        block = state.next_meaningful()
        if state.lines[state.index - 1] != block:  # BST compares the whole line ("nodes\n"); so does this
            raise state.error(f"the block keyword line {state.lines[state.index - 1]!r} has spaces around it")
        if block in seen:
            raise state.error(f"a second '{block}' block")
        seen.add(block)
        if block == "nodes":
            _nodes(state, smd)
        elif block == "skeleton":
            _skeleton(state, smd)
        elif block == "triangles":
            _triangles(state, smd)
        elif block == "vertexanimation":
            _vertexanimation(state, smd)
        else:
            raise state.error(f"unknown block {block!r}")
    if "nodes" not in seen or "skeleton" not in seen:
        raise SmdError(f"{name}: needs both a nodes and a skeleton block")
    first = smd.frames[min(smd.frames)]
    if "vertexanimation" not in seen and len(first) != len(smd.names):  # a VTA's frames only count its shapes
        raise SmdError(f"{name}: the first frame poses {len(first)} of {len(smd.names)} bones")
    return smd


def _text(line: bytes) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode("latin-1")


class _State:
    def __init__(self, name: str, lines: list[str]) -> None:
        self.name, self.lines, self.index = name, lines, 0

    def error(self, message: str) -> SmdError:
        return SmdError(f"{self.name}:{self.index}: {message}")

    def more(self) -> bool:
        while self.index < len(self.lines) and not self.lines[self.index].strip():
            self.index += 1
        return self.index < len(self.lines)

    def next_line(self) -> str:
        if self.index >= len(self.lines):
            self.index += 1
            raise self.error("the file ends inside a block (a truncated file?)")
        line = self.lines[self.index]
        self.index += 1
        return line

    def next_meaningful(self) -> str:
        while True:
            line = self.next_line().strip()
            if line and not line.startswith("//"):
                return line

    def expect_line(self, wanted: str) -> None:
        line = self.next_meaningful()
        if line != wanted:
            raise self.error(f"expected {wanted!r}, found {line!r}")


def _nodes(state: _State, smd: Smd) -> None:
    parents: list[int] = []
    while (line := state.next_meaningful()) != "end":
        match = NODE.match(line)
        if not match:
            raise state.error(f"not a node line ('index \"name\" parent'): {line!r}")
        index, node, parent = int(match[1]), match[2], int(match[3])
        if index != len(smd.names):
            raise state.error(f"node {index} where node {len(smd.names)} was due")
        if not node:
            raise state.error("a node without a name")
        if node in smd.names:
            raise state.error(f"a second node named {node!r}")
        if not -1 <= parent < index:
            raise state.error(f"node {index}'s parent {parent} is neither -1 nor an earlier node")
        smd.names.append(node)
        parents.append(parent)
    smd.parents = np.array(parents, dtype=int)


def _frame_time(state: _State, line: str, last: int | None) -> int | None:
    """N of a skeleton's or VTA's ``time N`` line, which must count up from ``last``; None for any other line."""
    time = TIME.match(line)
    if not time:
        return None
    value = int(time[1])
    if last is not None and value <= last:
        raise state.error(f"time {value} after time {last}")
    return value


def _skeleton(state: _State, smd: Smd) -> None:
    frame: dict[int, np.ndarray] | None = None
    last = None
    while (line := state.next_meaningful()) != "end":
        value = _frame_time(state, line, last)
        if value is not None:
            last, frame = value, {}
            smd.frames[value] = frame
            continue
        if frame is None:
            raise state.error(f"a pose before any 'time': {line!r}")
        match = POSE.match(line)
        if not match:
            raise state.error(f"not a pose line ('bone px py pz rx ry rz', finite decimals): {line!r}")
        bone = int(match[1])
        if not 0 <= bone < len(smd.names):
            raise state.error(f"bone {bone} is not a node")
        if bone in frame:
            raise state.error(f"bone {bone} posed twice in one frame")
        frame[bone] = np.array([float(match[i]) for i in range(2, 8)])
    if not smd.frames:
        raise state.error("a skeleton without frames")


def _triangles(state: _State, smd: Smd) -> None:
    rows: list[list[float]] = []
    while (line := state.next_meaningful()) != "end":
        material = line.strip()
        if not material:
            raise state.error("a triangle without a material")
        for _ in range(3):
            vertex = state.next_line()
            match = VERTEX_HEAD.match(vertex)
            if not match:
                raise state.error(f"not a vertex line ('bone px py pz nx ny nz u v [links]'): {vertex!r}")
            bone = int(match[1])
            if not 0 <= bone < len(smd.names):
                raise state.error(f"vertex bone {bone} is not a node")
            rows.append([float(match[i]) for i in range(2, 10)])
            smd.weights.append(_links(state, match[10], len(smd.names)) or [(bone, 1.0)])
        smd.materials.append(material)
    smd.vertices = np.array(rows, dtype=float).reshape(-1, 8)


def _links(state: _State, rest: str, bones: int) -> list[tuple[int, float]]:
    fields = rest.split()
    if not fields:
        return []
    if not re.fullmatch(INT, fields[0]):
        raise state.error(f"the link count {fields[0]!r} is not an integer")
    count = int(fields[0])
    if count < 0 or len(fields) != 1 + 2 * count:
        raise state.error(f"{count} links announced, {len(fields) - 1} numbers follow")
    links = []
    for k in range(count):
        bone, weight = fields[1 + 2 * k], fields[2 + 2 * k]
        if not re.fullmatch(INT, bone) or not FLOAT_ONLY.match(weight):
            raise state.error(f"link {k}: {bone!r} {weight!r} is not 'bone weight'")
        if not 0 <= int(bone) < bones:
            raise state.error(f"link bone {bone} is not a node")
        if not float(weight) > 0:
            raise state.error(f"link weight {weight} is not positive")
        links.append((int(bone), float(weight)))
    if count and abs(sum(w for _, w in links) - 1.0) > 1e-3:
        raise state.error(f"link weights sum to {sum(w for _, w in links)}, not 1")
    return links


def _vertexanimation(state: _State, smd: Smd) -> None:
    current: list[list[float]] | None = None
    last = None
    while (line := state.next_meaningful()) != "end":
        value = _frame_time(state, line, last)
        if value is not None:
            last, current = value, []
            smd.shapes[value] = current  # type: ignore[assignment]
            continue
        if current is None:
            raise state.error(f"a vertex before any 'time': {line!r}")
        match = POSE.match(line)
        if not match:
            raise state.error(f"not a vertex-animation line ('vertex px py pz nx ny nz'): {line!r}")
        if int(match[1]) < 0:
            raise state.error(f"vertex index {match[1]} is negative")
        current.append([float(match[i]) for i in range(1, 8)])
    for time, rows in list(smd.shapes.items()):
        table = np.array(rows, dtype=float).reshape(-1, 7)
        indices = table[:, 0].astype(int)
        if len(np.unique(indices)) != len(indices):
            raise SmdError(f"{state.name}: vertex animation time {time} lists a vertex twice")
        smd.shapes[time] = (indices, table[:, 1:])
    if smd.shapes and 0 not in smd.shapes:
        raise SmdError(f"{state.name}: vertex animation without its base frame (time 0)")
