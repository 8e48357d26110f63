"""Stand-ins for Blender's worker processes, so the batch's bookkeeping (crashes, limits, progress) is tested
without Blender and in a fraction of the time."""

from __future__ import annotations

import sys
import tempfile

from conftest import ROOT

from io_ms3d_mdl.cli import batch, workers

FAKE_WORKER = """
import json, os, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from io_ms3d_mdl.cli.safe_write import partial_path
job = json.loads(Path(sys.argv[-1]).read_text())
if {never_ready}:
    os._exit(2)
print("READY", flush=True)
for line in sys.stdin:  # one task a line, as the parent sends them
    task = json.loads(line)
    source, target = Path(task["source"]), Path(task["target"])
    target.parent.mkdir(parents=True, exist_ok=True)
    if "crash" in source.name:  # dies half-way through writing this file's output
        partial_path(target, job["token"]).write_bytes(b"half")
        os._exit(3)
    if "slow" in source.name:
        time.sleep(60)
    if "hog" in source.name:  # holds 400 MB until it is killed
        hog = b"x" * (400 * 1024 * 1024)
        time.sleep(60)
    time.sleep(0.1)
    target.write_bytes(source.read_bytes())
    record = {{"file": str(source), "status": "ok", "warnings": [], "seconds": 0.1, "output": str(target)}}
    print("RESULT " + json.dumps(record), flush=True)
"""


def fake_workers(monkeypatch, tmp_path, never_ready=False) -> list[list[str]]:
    """Workers that copy each input to its output in 0.1 s, die on files named ``crash``, hang on ``slow`` and take
    400 MB on ``hog``; returns their commands. The system temporary folder becomes ``tmp_path/system-tmp``."""
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER.format(root=str(ROOT), never_ready=never_ready))
    started = []

    def command(args):
        started.append(args)
        return [sys.executable, str(script), *args]

    monkeypatch.setattr(workers, "worker_command", command)
    monkeypatch.setattr(batch, "bpy_available", lambda: True)
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(system_tmp))
    return started
