"""Per-file records, the JSON report they go into, reading an earlier report back (``--resume``), merging the
reports of several shards, and the summary table people read.

A record: ``file``, ``status`` (``ok`` or ``failed``), ``output`` and its ``output_identity`` (``output_log.py``),
``error``, ``warnings``, the counts of what was built, ``seconds``, and the input's ``input_size`` and
``input_mtime_ns`` when it was converted; ``reused: true`` marks an output an earlier run made that was still up to
date.
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..filesystem import mounts
from .files import NotAModel, Task, parse_shard
from .no_links import LinkInTheWay
from .progress import Progress
from .safe_write import NAME_MAX, PATH_MAX, NameTooLong, OutputExists, write_text

KIND = "io_ms3d_mdl batch report"
CHECKPOINT_SECONDS = 10.0  # how far behind the report on disk may fall during a run (a killed run resumes from it)
TABLE_ROWS = 100  # above this many files the summary lists only failures; the report has everything
COUNTS = ("objects", "vertices", "triangles", "materials", "bones", "actions")


def one_line(message: str, limit: int = 500) -> str:
    """Errors go into a one-line-per-file summary; an exception's text may span lines or run long."""
    text = " ".join(message.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def describe(exc: BaseException) -> str:
    """Our own refusals as they stand; anything else with its type, which says more than its text alone."""
    if isinstance(exc, OutputExists | NotAModel | LinkInTheWay | NameTooLong):
        return str(exc)
    if too_long(exc):  # the OS (or Blender, in its words) refused a name we did not check ourselves
        return f"a name or path too long for the file system (at most {NAME_MAX} bytes a name, {PATH_MAX:,} a path)"
    return f"{type(exc).__name__}: {exc}"


def too_long(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno == errno.ENAMETOOLONG:
        return True
    return isinstance(exc, RuntimeError) and "name too long" in str(exc).lower()


def new_record(source: Path) -> dict[str, Any]:
    return {"file": str(source), "status": "ok", "warnings": [], "seconds": 0.0}


def failure(source: Path, error: str, seconds: float = 0.0) -> dict[str, Any]:
    return {
        "file": str(source),
        "status": "failed",
        "warnings": [],
        "seconds": round(seconds, 3),
        "error": one_line(error),
    }


def stamp(path: Path) -> dict[str, int]:
    """What --resume compares: an input whose size or modification time changed is converted again."""
    where = mounts.split(str(path))  # a model inside an archive: the archive's
    try:
        info = os.stat(where[0]) if where else path.stat()
    except OSError:
        return {}
    return {"input_size": info.st_size, "input_mtime_ns": info.st_mtime_ns}


# --- reading an earlier report back -------------------------------------------------------------------------


class ReportInvalid(Exception):
    """A report of ours (``--resume``'s earlier one, or one to merge) with a field that does not have the type a
    report gives it: refused, naming the file and the field, with exit status 1. A report is input like any file:
    hand-edited or damaged, its values would otherwise end in a traceback halfway through the run."""


def load_report(path: Path) -> dict[str, Any] | None:
    """An earlier report, or None when there is none; ValueError when the file is not one of ours, ReportInvalid
    when it is but a field has the wrong type. Read without following a link at its own name (a report is never
    read through a link planted where it should be)."""
    try:
        text = read_regular(path)
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ValueError(f"{path} is not a report of io-ms3d-mdl batch") from None
    except OSError as exc:
        raise ValueError(f"cannot read the report {path}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"cannot read the report {path}: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("files"), list) or data.get("kind", KIND) != KIND:
        raise ValueError(f"{path} is not a report of io-ms3d-mdl batch")
    check_report(data, path)
    return data


def read_regular(path: Path) -> str:
    """A regular file's text, opened without following a link at its name and without blocking on a FIFO; OSError
    (a link, a folder, a device: "not a regular file") otherwise."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    if os.path.islink(path):  # (where O_NOFOLLOW is missing: Windows)
        raise OSError(f"{path} is a symbolic link, not a report")
    try:
        descriptor = os.open(path, flags)
    except OSError as exc:
        if os.path.islink(path):
            raise OSError(f"{path} is a symbolic link, not a report") from None
        raise exc
    with os.fdopen(descriptor, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise IsADirectoryError(f"{path} is not a regular file")
        return f.read().decode("utf-8", errors="strict")


# --- what a report holds: each field's type, checked before any of it is used ---------------------------------


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _count(value: Any) -> bool:
    return _whole(value) and value >= 0


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _identity(value: Any) -> bool:
    return value is None or (
        isinstance(value, dict) and all(_whole(value.get(key)) for key in ("ino", "size", "mtime_ns"))
    )


def _shard(value: Any) -> bool:
    if value is None:
        return True
    if not isinstance(value, str):
        return False
    try:
        parse_shard(value)
    except ValueError:
        return False
    return True


Check = tuple[str, Callable[[Any], bool]]
TEXT: Check = ("text", lambda v: isinstance(v, str))
REPORT_FIELDS: dict[str, Check] = {
    "inputs": ("a count", _count),
    "complete": ("true or false", lambda v: isinstance(v, bool)),
    "seconds": ("a number of seconds", _number),
    "shard": ('"I/N" or null', _shard),
    "merged_from": ("a list of paths", _texts),
}
RECORD_FIELDS: dict[str, Check] = {
    "file": TEXT,
    "status": ('"ok" or "failed"', lambda v: v in ("ok", "failed")),
    "output": TEXT,
    "output_identity": ("an identity (ino, size, mtime_ns) or null", _identity),
    "error": TEXT,
    "warnings": ("a list of texts", _texts),
    "seconds": ("a number of seconds", _number),
    "input_size": ("a count", _count),
    "input_mtime_ns": ("a whole number", _whole),
    "reused": ("true or false", lambda v: isinstance(v, bool)),
    **{name: ("a count", _count) for name in COUNTS},
    "degenerate_triangles": ("a count", _count),
}
REQUIRED = ("file", "status")


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the text {json.dumps(value[:40])}"
    return "a list" if isinstance(value, list) else "an object"


def check_report(data: dict[str, Any], path: Path) -> None:
    """ReportInvalid at the first field whose value a report never has (unknown fields are let be)."""

    def refuse(where: str, value: Any, expected: str) -> ReportInvalid:
        return ReportInvalid(
            f"the report {path} is damaged: {where} is {_json_kind(value)}, where a report has {expected}; "
            "fix or remove it"
        )

    for name, (expected, valid) in REPORT_FIELDS.items():
        if name in data and not valid(data[name]):
            raise refuse(name, data[name], expected)
    for number, record in enumerate(data["files"]):
        if not isinstance(record, dict):
            raise refuse(f"files[{number}]", record, "an object (one file's record)")
        for name in REQUIRED:
            if name not in record:
                raise ReportInvalid(f"the report {path} is damaged: files[{number}] has no {name!r}; fix or remove it")
        for name, (expected, valid) in RECORD_FIELDS.items():
            if name in record and not valid(record[name]):
                raise refuse(f"files[{number}].{name}", record[name], expected)


def records_by_file(report: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    if report is None:
        return {}
    return {r["file"]: r for r in report["files"]}  # (each a record with its file: check_report saw to it)


def up_to_date(task: Task, earlier: dict[str, Any] | None, now: dict[str, int]) -> bool:
    """Converted before from this very input (same size and modification time) into an output that still exists."""
    return bool(
        earlier
        and now
        and task.target is not None
        and earlier.get("status") == "ok"
        and earlier.get("output") == str(task.target)
        and all(earlier.get(key) == value for key, value in now.items())
        and task.target.is_file()
    )


def recorded_identity(task: Task, earlier: dict[str, Any] | None) -> list[dict[str, int]]:
    """The identity of the output an earlier run recorded at this task's target (none in reports from before
    identities were recorded: such an output is not replaced)."""
    if not earlier or task.target is None or earlier.get("output") != str(task.target):
        return []
    found = earlier.get("output_identity")
    return [found] if isinstance(found, dict) else []


# --- writing ------------------------------------------------------------------------------------------------


class ReportWriter:
    """Keeps the report on disk whole and at most CHECKPOINT_SECONDS behind, so a run that is killed can be
    resumed. Until a task has its new record, the earlier report's record for it is kept."""

    def __init__(
        self,
        path: Path,
        meta: dict[str, Any],
        order: list[str],
        earlier: dict[str, dict],
        root: Path | None = None,
    ) -> None:
        self.path = path
        self.root = root  # the output folder: the report is written below it without following a link
        self.meta = meta
        self.order = order
        self.earlier = earlier
        self.records: dict[str, dict[str, Any]] = {}
        self.started = time.perf_counter()
        self.written = self.started

    def add(self, record: dict[str, Any]) -> None:
        self.records[record["file"]] = record
        if time.perf_counter() - self.written >= CHECKPOINT_SECONDS:
            self.write(complete=False)

    def results(self) -> list[dict[str, Any]]:
        return [self.records[f] for f in self.order if f in self.records]

    def files(self) -> list[dict[str, Any]]:
        """What the report holds: this run's records, and the earlier report's for the tasks not redone yet."""
        files = [self.records.get(f) or self.earlier.get(f) for f in self.order]
        return [r for r in files if r is not None]

    def write(self, complete: bool) -> None:
        report = {
            "kind": KIND,
            **self.meta,
            "complete": complete,
            "seconds": round(time.perf_counter() - self.started, 3),
            "files": self.files(),
        }
        write_text(self.path, json.dumps(report, indent=2), self.root)
        self.written = time.perf_counter()


def on_finished(
    writer: ReportWriter, progress: Progress, stamps: dict[Path, dict[str, int]]
) -> Callable[[dict[str, Any]], None]:
    """What batch and decompile do with each finished file's record: add its source's stamp (for --resume),
    count it in the progress line, then keep it in the report."""

    def finished(record: dict[str, Any]) -> None:
        record.update(stamps.get(Path(record["file"]), {}))
        progress.finished_file(record)
        writer.add(record)

    return finished


# --- merging shards -----------------------------------------------------------------------------------------


def merge_reports(paths: list[Path]) -> tuple[dict[str, Any], list[str]]:
    """One report from several (the shards of one batch, or reruns): every input once, the later report winning
    for an input named in several. The problems list says why the result may not cover the whole batch."""
    problems: list[str] = []
    records: dict[str, dict[str, Any]] = {}
    shards: set[tuple[int, int]] = set()
    totals: set[int] = set()
    fingerprints: list[Any] = []
    seconds = 0.0
    for path in paths:
        report = load_report(path)
        if report is None:
            problems.append(f"{path}: no such report")
            continue
        if report.get("complete") is False:
            problems.append(f"{path}: that run did not finish")
        if report.get("shard"):
            shards.add(parse_shard(report["shard"]))
        if isinstance(report.get("inputs"), int):
            totals.add(report["inputs"])
        if "settings" in report and report["settings"] not in fingerprints:
            fingerprints.append(report["settings"])
        seconds += float(report.get("seconds") or 0.0)
        records.update(records_by_file(report))
    counts = {count for _, count in shards}
    if len(counts) > 1:
        problems.append(f"the reports come from different shardings ({', '.join(f'of {n}' for n in sorted(counts))})")
    elif counts:
        (count,) = counts
        missing = sorted(set(range(1, count + 1)) - {index for index, _ in shards})
        if missing:
            problems.append(f"shard{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} of {count} missing")
    if len(totals) == 1 and len(records) != next(iter(totals)):
        problems.append(f"the reports cover {len(records):,} of {next(iter(totals)):,} inputs")
    if len(fingerprints) > 1:
        problems.append("the reports were made with different options")
    merged = {
        "kind": KIND,
        "settings": fingerprints[0] if len(fingerprints) == 1 else None,
        "shard": None,
        "inputs": next(iter(totals)) if len(totals) == 1 else len(records),
        "merged_from": [str(p) for p in paths],
        "complete": not problems,
        "seconds": round(seconds, 3),
        "files": sorted(records.values(), key=lambda r: r["file"]),
    }
    return merged, problems


# --- for people ---------------------------------------------------------------------------------------------


def summary(results: list[dict[str, Any]], verb: str = "converted") -> list[str]:
    """The table (while it stays readable), the totals and each failure with its reason."""
    lines: list[str] = []
    if len(results) <= TABLE_ROWS:
        header = ("file", "status", *COUNTS, "warnings", "seconds")
        rows = [header] + [
            (
                Path(r["file"]).name,
                str(r.get("status")) + (" (reused)" if r.get("reused") else ""),
                *(f"{r[key]:,}" if key in r else "" for key in COUNTS),
                str(len(r.get("warnings", []))),
                f"{float(r.get('seconds') or 0):.2f}",
            )
            for r in sorted(results, key=lambda r: r["file"])
        ]
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows]
        lines.append("")
    failed = [r for r in results if r.get("status") != "ok"]
    reused = sum(1 for r in results if r.get("reused"))
    total = f"{len(results) - len(failed):,} of {len(results):,} files {verb}"
    lines.append(total + (f" ({reused:,} up to date from an earlier run)" if reused else ""))
    for r in failed:
        name, error = Path(r["file"]).name, r.get("error", "failed")
        lines.append(f"  {name}: {error.removeprefix(name + ': ')}")
    return lines
