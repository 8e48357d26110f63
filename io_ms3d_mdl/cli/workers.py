"""Worker processes: each converts one file at a time, and one that runs too long or takes too much memory can be
killed without losing the batch.

The parent starts a worker with a job file (the settings), waits for ``READY``, then sends one task per line on
its stdin and reads one ``RESULT`` line back per task. Workers take the next file as they finish one, so a large
file never holds up a fixed share of the others. A worker that dies on a file, or is killed for a limit, fails that
file with the reason and a fresh worker goes on; one that dies before it is ready stops taking files, and when no
worker is left the remaining files are failed with its reason rather than restarted for each.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from .blender_side import addon_registered, convert_one, importer
from .files import Task
from .memory import resident_mb
from .needs_blender import inside_blender, leave
from .reports import describe, failure
from .settings import Settings

PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])  # the folder holding io_ms3d_mdl, for the worker's path
WORKER_CODE = (
    "import sys; a = sys.argv[sys.argv.index('--') + 1:]; sys.path.insert(0, a[0]); "
    "from io_ms3d_mdl.cli.workers import serve; serve(a[1])"
)
POLL_SECONDS = 0.25  # how often limits are checked
RECYCLE_FRACTION = 0.5  # a worker still holding more than this share of --max-memory after a file is replaced


@dataclass(frozen=True)
class Limits:
    timeout: float | None = None  # seconds per file
    max_memory: float | None = None  # megabytes per worker process

    def __bool__(self) -> bool:
        return self.timeout is not None or self.max_memory is not None


# --- the worker ---------------------------------------------------------------------------------------------


def worker_command(args: list[str]) -> list[str]:
    """Start a worker: with this Python when bpy is a module, through Blender when running inside Blender. (The
    parent never imports the bpy module itself: it only waits for workers.)"""
    bpy = sys.modules.get("bpy")
    if inside_blender():
        blender = [bpy.app.binary_path, "--background", "--factory-startup", "--python-exit-code", "1"]
        return [*blender, "--python-expr", WORKER_CODE, "--", PACKAGE_PARENT, *args]
    return [sys.executable, "-c", WORKER_CODE, "--", PACKAGE_PARENT, *args]


def serve(job_file: str) -> None:
    """The worker's main loop. Its stdout carries only the protocol: Blender's own messages are sent to stderr."""
    protocol = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    settings = Settings.from_json(json.loads(Path(job_file).read_text(encoding="utf-8")))
    import_file = importer(settings)
    with addon_registered():
        print("READY", file=protocol, flush=True)
        for line in sys.stdin:
            if line.strip():
                record = convert_one(import_file, Task.from_json(json.loads(line)), settings)
                print("RESULT " + json.dumps(record), file=protocol, flush=True)
    protocol.close()
    leave(0)


# --- the parent ---------------------------------------------------------------------------------------------


class Worker:
    """One worker process, as its parent sees it."""

    def __init__(self, command: list[str], verbose: bool) -> None:
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=None if verbose else subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )
        self.task: Task | None = None
        self.since = 0.0
        self.killed_for: str | None = None
        self.lock = threading.Lock()  # the watcher must never kill a worker for a file it has just finished

    def ready(self) -> bool:
        """Wait for READY; False when the process ended first."""
        return any(line.strip() == "READY" for line in self.lines())

    def lines(self) -> Any:
        stdout: TextIO = self.process.stdout
        yield from iter(stdout.readline, "")

    def convert(self, task: Task) -> dict[str, Any] | None:
        """Send one task and wait for its record; None when the process ended first."""
        with self.lock:
            self.task, self.since = task, time.monotonic()
        try:
            self.process.stdin.write(json.dumps(task.to_json()) + "\n")
            self.process.stdin.flush()
            for line in self.lines():
                if line.startswith("RESULT "):
                    record = json.loads(line[7:])
                    if record.get("file") == str(task.source):
                        return record
        except (BrokenPipeError, OSError, ValueError):
            pass
        finally:
            with self.lock:
                self.task = None
        return None

    def kill(self, task: Task, reason: str) -> None:
        """Kill the worker if it is still on ``task``."""
        with self.lock:
            if self.task is task and self.killed_for is None:
                self.killed_for = reason
                self.process.kill()

    def status(self) -> int:
        return self.process.wait()

    def close(self) -> None:
        """No more tasks: the worker leaves when its stdin closes (it is killed if it does not). Its pipes are closed
        and its exit collected, so a long batch with many restarts runs out of neither."""
        try:
            self.process.stdin.close()
            self.process.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        with suppress(OSError):
            self.process.stdout.close()


class Workers:
    """Runs tasks in worker processes and reports every task exactly once, crashes and kills included."""

    def __init__(self, settings: Settings, scratch: Path, limits: Limits = Limits()) -> None:
        self.settings = settings
        self.scratch = scratch
        self.limits = limits
        self.events: queue.Queue[tuple[str, Any]] = queue.Queue()
        self.pending: deque[Task] = deque()
        self.live: list[Worker] = []  # ready, and perhaps on a file (what the watcher looks at)
        self.started: list[Worker] = []  # not yet closed (what an interruption kills)
        self.lock = threading.Lock()
        self.drivers = 0
        self.running = True
        self.job_file = scratch / "job.json"

    def run(
        self, tasks: list[Task], count: int, started: Callable[[Task], None], finished: Callable[[dict], None]
    ) -> None:
        if threading.current_thread() is threading.main_thread():
            # Python's own Ctrl-C handler again: importing bpy may have put Blender's in its place, which swallows it.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self.job_file.write_text(json.dumps(self.settings.to_json()), encoding="utf-8")
        self.pending.extend(tasks)
        self.drivers = count
        threads = [threading.Thread(target=self.drive, daemon=True) for _ in range(count)]
        if self.limits:
            threads.append(threading.Thread(target=self.watch, daemon=True))
        try:
            for thread in threads:
                thread.start()
            reported = 0
            while reported < len(tasks):
                try:  # a bounded wait: the main thread comes back to Python often, so Ctrl-C is never missed
                    kind, payload = self.events.get(timeout=0.2)
                except queue.Empty:
                    continue
                if kind == "start":
                    started(payload)
                else:
                    finished(payload)
                    reported += 1
        finally:
            self.running = False
            for worker in list(self.started):  # only left running when we are interrupted
                if worker.process.poll() is None:
                    worker.process.kill()

    def take(self) -> Task | None:
        with self.lock:
            return self.pending.popleft() if self.pending else None

    def drive(self) -> None:
        """One thread per worker slot, so progress shows as soon as any worker starts or finishes a file."""
        worker: Worker | None = None
        reason = None
        try:
            while (task := self.take()) is not None:
                if worker is None:
                    worker, reason = self.start()
                    if worker is None:  # it never got ready: fail this file and take no more
                        self.events.put(("done", failure(task.source, reason)))
                        return
                self.events.put(("start", task))
                try:
                    record = worker.convert(task)
                except Exception as exc:  # never leave the parent waiting for a file nobody reports
                    worker.killed_for = worker.killed_for or f"worker failed ({describe(exc)})"
                    worker.process.kill()
                    record = None
                if record is None:
                    problem = worker.killed_for or f"worker exited with status {worker.status()} on this file"
                    self.events.put(("done", failure(task.source, problem, time.monotonic() - worker.since)))
                    self.retire(worker)
                    worker = None
                    continue
                self.events.put(("done", record))
                if self.bloated(worker):
                    self.retire(worker)
                    worker = None
        finally:
            if worker is not None:
                self.retire(worker)
            self.leave(reason)

    def start(self) -> tuple[Worker | None, str]:
        """A fresh worker that is ready for tasks, or None and why not."""
        try:
            worker = Worker(worker_command([str(self.job_file)]), self.settings.verbose)
        except Exception as exc:  # no such program, no memory for another process, ...
            return None, f"worker failed ({describe(exc)})"
        with self.lock:
            self.started.append(worker)
        if worker.ready():
            with self.lock:
                self.live.append(worker)
            return worker, ""
        status = worker.status()
        self.retire(worker)
        return None, f"worker exited with status {status} before its first file"

    def retire(self, worker: Worker) -> None:
        """Done with a worker, whether it finished, died or was killed."""
        with self.lock:
            if worker in self.live:
                self.live.remove(worker)
        worker.close()
        with self.lock:
            self.started.remove(worker)

    def leave(self, reason: str | None) -> None:
        """The last driver to stop fails what is left (only when workers would not start)."""
        with self.lock:
            self.drivers -= 1
            orphans: list[Task] = []
            if self.drivers == 0:
                orphans = list(self.pending)
                self.pending.clear()
        for task in orphans:
            self.events.put(("done", failure(task.source, reason or "no worker could be started")))

    def bloated(self, worker: Worker) -> bool:
        """Memory a worker keeps after a large file would count against the next one: replace such a worker."""
        if self.limits.max_memory is None:
            return False
        used = resident_mb(worker.process.pid)
        return used is not None and used > self.limits.max_memory * RECYCLE_FRACTION

    def watch(self) -> None:
        """Kill a worker whose current file passes --timeout or whose process passes --max-memory."""
        while self.running:
            with self.lock:
                busy = [(w, w.task, w.since) for w in self.live if w.task is not None]
            for worker, task, since in busy:
                if self.limits.timeout is not None and time.monotonic() - since > self.limits.timeout:
                    worker.kill(task, f"timed out after {self.limits.timeout:g} s (--timeout)")
                    continue
                used = resident_mb(worker.process.pid) if self.limits.max_memory is not None else None
                if used is not None and used > self.limits.max_memory:
                    worker.kill(
                        task, f"used {used:,.0f} MB of memory, more than --max-memory {self.limits.max_memory:g}"
                    )
            time.sleep(self._pause([since for _, _, since in busy]))

    def _pause(self, starts: list[float]) -> float:
        """Until the next look: a poll's time, or less where a file's --timeout runs out sooner (a file that
        starts meanwhile is seen within half its timeout), so a timeout kills when it passes, not up to a poll
        later (a file of 0.5 s got through --timeout 0.3)."""
        timeout = self.limits.timeout
        if timeout is None:
            return POLL_SECONDS
        now = time.monotonic()
        pause = min([POLL_SECONDS, timeout / 2, *(since + timeout - now for since in starts)])
        return max(pause, 0.0) + 0.002  # past the deadline, never a busy loop
