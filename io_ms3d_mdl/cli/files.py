"""Which files to convert, and where each output goes.

Folders are searched recursively for .ms3d and .mdl files. The outputs mirror the input tree: a model found under a
folder given on the command line goes to ``OUTPUT_DIR/<its path below that folder>/<stem>.blend`` (or ``.glb``);
files given directly are placed relative to their common folder. Where two inputs would still share an output name,
case-insensitively (``x.ms3d`` and ``x.mdl``, or ``X.ms3d`` beside ``x.ms3d``), both keep their source extension
(``x.ms3d.blend``, ``x.mdl.blend``), and a number is added if even that clashes, so every output is unique. Names
are worked out over every input before any ``--shard`` is taken, so shards agree on them.
"""

from __future__ import annotations

import os
import sys
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

EXTENSIONS = {".ms3d", ".mdl"}


class NotAModel(Exception):
    """An input that is missing or is not a model file; its message is reported as it stands."""


@dataclass(frozen=True)
class Found:
    """An input file, and where it sits below the folder it was found under (which its output mirrors)."""

    source: Path
    relative: Path


@dataclass(frozen=True)
class Task:
    source: Path
    target: Path | None  # None: imported into the one open file (convert -o, --single, or nothing saved)
    # --resume: the target is an output an earlier run wrote, with this identity (``output_log.identity``); it may
    # be replaced while it still has it
    replaces: dict[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "target": str(self.target) if self.target else None,
            "replaces": self.replaces,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Task:
        target = data["target"]
        return cls(Path(data["source"]), Path(target) if target else None, data["replaces"])


def read_list(path: str) -> list[str]:
    """``--files-from``: one path per line (``-`` reads standard input); blank lines are skipped."""
    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return [line.rstrip("\r") for line in text.split("\n") if line.strip()]


def collect(inputs: list[str], exclude: Path | None = None) -> list[Found]:
    """Folders are searched recursively; files given directly are placed relative to their common folder. Places
    come from the paths as given (``..`` folded, links not followed), so they never climb out of the output folder.
    Nothing in ``exclude`` (the output folder, resolved, when it lies inside the inputs) is read as input."""
    direct = [absolute(item) for item in inputs if not Path(item).is_dir()]
    base = common_folder([path for path in direct if path.is_file()])
    found: list[Found] = []
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            models = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in EXTENSIONS)
            found += [Found(p.resolve(), p.relative_to(path)) for p in models]
        else:  # a missing file is kept: it is reported as failed
            found.append(Found(path.resolve(), below(absolute(item), base)))
    if exclude is not None:
        kept = [item for item in found if not (item.source == exclude or exclude in item.source.parents)]
        if len(kept) < len(found):
            print(
                f"{len(found) - len(kept):,} files inside the output folder {exclude} are not read as input",
                file=sys.stderr,
            )
        found = kept
    return unique_sources(found)


def absolute(item: str) -> Path:
    return Path(os.path.abspath(item))


def common_folder(files: list[Path]) -> Path | None:
    try:
        return Path(os.path.commonpath([f.parent for f in files])) if files else None
    except ValueError:  # on different drives (Windows): nothing in common
        return None


def below(path: Path, base: Path | None) -> Path:
    try:
        return path.relative_to(base) if base else Path(path.name)
    except ValueError:
        return Path(path.name)


def unique_sources(found: list[Found]) -> list[Found]:
    """A file given twice (itself and in its folder) is converted once, where it was first named."""
    seen: set[Path] = set()
    unique = []
    for item in found:
        if item.source not in seen:
            seen.add(item.source)
            unique.append(item)
    return unique


def fold(path: Path) -> str:
    """A path as case-insensitive file systems (Windows, macOS) compare it."""
    return unicodedata.normalize("NFC", path.as_posix()).casefold()


def output_paths(relatives: list[Path], extension: str) -> list[Path]:
    """``folder/stem.ext``; where that clashes case-insensitively, ``folder/name.ext`` (the source extension kept);
    where even that clashes, a number. Deterministic for a given input order, and unique."""
    plain = [r.with_name(r.stem + extension) for r in relatives]
    clashes = Counter(fold(p) for p in plain)
    named = [
        r.with_name(r.name + extension) if clashes[fold(p)] > 1 else p for r, p in zip(relatives, plain, strict=True)
    ]
    taken: set[str] = set()
    unique = []
    for path in named:
        candidate, number = path, 1
        while fold(candidate) in taken:
            number += 1
            candidate = path.with_name(f"{path.name[: -len(extension)]}-{number}{extension}")
        taken.add(fold(candidate))
        unique.append(candidate)
    return unique


def plan(found: list[Found], out_dir: Path | None, fmt: str) -> list[Task]:
    """One task per input; with no output folder everything goes into the one open file."""
    if out_dir is None:
        return [Task(item.source, None) for item in found]
    targets = output_paths([item.relative for item in found], "." + fmt)
    return [Task(item.source, out_dir / target) for item, target in zip(found, targets, strict=True)]


def parse_shard(text: str) -> tuple[int, int]:
    """``I/N`` with 1 ≤ I ≤ N: this run takes every N-th input starting at the I-th."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--shard takes I/N, such as 1/4, not {text!r}") from None
    if not 1 <= index <= count:
        raise ValueError(f"--shard {text}: I must be between 1 and N")
    return index, count


def shard(tasks: list[Task], index: int, count: int) -> list[Task]:
    return tasks[index - 1 :: count]
