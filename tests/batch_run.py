"""``scripts/batch_import.py`` started as a user starts it, for the batch tests: one command line and one reading
of its report, so every test checks the script the same way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

SCRIPT = ROOT / "scripts" / "batch_import.py"


def batch_command(*args: object) -> list[str]:
    """The command that runs the script with ``args`` (each made a string) in this Python."""
    return [sys.executable, str(SCRIPT), *map(str, args)]


def run_batch(
    *args: object, cwd: Path | None = None, env: dict[str, str] | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """The script run to its end, its output captured as text; ``timeout`` bounds a hung run."""
    return subprocess.run(batch_command(*args), capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def report_of(path: Path) -> dict[str, dict]:
    """The report's records by input path."""
    return {r["file"]: r for r in json.loads(path.read_text())["files"]}
