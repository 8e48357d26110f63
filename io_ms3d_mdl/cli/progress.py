"""Progress on stderr: the file now being converted, how many are done, and a time-left estimate that settles.

The estimate is the mean time of the last WINDOW finished files times the files left, divided by the workers. It is
shown only once WARMUP files are done (the first ones include starting Blender), and rounded so that it does not
flicker from one file to the next.
"""

from __future__ import annotations

import sys
import time
from collections import deque
from pathlib import Path
from typing import Any, TextIO

from .files import Task

WINDOW = 20
WARMUP = 3


def rounded_duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(5, round(seconds / 5) * 5)} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    hours, minutes = divmod(round(seconds / 300) * 5, 60)
    return f"{hours} h {minutes:02d} min"


class Progress:
    def __init__(self, total: int, workers: int = 1, stream: TextIO | None = None) -> None:
        self.total = total
        self.workers = max(1, workers)
        self.stream = stream or sys.stderr
        self.begun = 0
        self.done = 0
        self.failed = 0
        self.recent: deque[float] = deque(maxlen=WINDOW)
        self.started = time.perf_counter()

    def estimate(self) -> str | None:
        """The time left, once WARMUP files are done."""
        if self.done < WARMUP or not self.recent:
            return None
        mean = sum(self.recent) / len(self.recent)
        return rounded_duration(mean * (self.total - self.done) / min(self.workers, max(1, self.total - self.done)))

    def started_file(self, task: Task) -> None:
        """Called as a file starts: this is the line that names it."""
        self.begun += 1
        left = self.estimate()
        line = f"[{self.begun}/{self.total}] {task.source.name}"
        if self.done:
            status = f"{self.done} done" + (f", {self.failed} failed" if self.failed else "")
            line += f"  ({status}; {f'about {left} left' if left else 'estimating the time left'})"
        self.say(line)

    def finished_file(self, record: dict[str, Any]) -> None:
        self.done += 1
        self.recent.append(float(record.get("seconds") or 0.0))
        if record["status"] != "ok":
            self.failed += 1
            name = Path(record["file"]).name
            self.say(f"  failed: {name}: {record.get('error', '').removeprefix(name + ': ')}")

    def say(self, line: str) -> None:
        print(line, file=self.stream, flush=True)
