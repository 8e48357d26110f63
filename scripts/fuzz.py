"""Fuzz every reader for as long as asked: ``python scripts/fuzz.py --minutes 10`` (no Blender needed).

The same seeds, mutation engine and oracles as ``tests/test_fuzz.py`` (``tests/fuzzing.py``), run in a loop over
all seeds. Each case runs under a time bound (SIGALRM) and the process under a memory bound (RLIMIT_AS), so a
hang or a runaway allocation is a finding like any escaped exception. Findings are written to ``--out`` as the
mutated files plus a line in ``findings.txt``. ``--atheris`` drives the same oracles with atheris's coverage-guided
mutator (``pip install atheris``) on top of ours; without it the loop is seeded and reproducible (``--seed``).

``--blender`` (with the bpy wheel) runs mutated files through the whole import instead: the real operators, and the
batch converter for a share of the cases (``--batch-fraction``), in ``--jobs`` Blender worker processes that each
import many cases (``tests/fuzz_blender.py``). Seeds are file trees: a model with everything it reads (sidecars,
includes, VMTs, VTFs) in a game-like folder beside a canary folder, from the synthetic, sample and crafted hostile
(``tests/hostile.py``) cases. Every case must end in success or in our own message (an ERROR report) with no
traceback printed, within ``--case-seconds`` and ``--memory-mb`` resident; a failed import must leave bpy.data as
it was, a successful one no NaN or infinity; nothing in the canary folder may be opened. Anything else, or a worker
that crashes or hangs, is a finding: the case's files, its ``case.json`` and ``output.txt`` go to ``--out``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import queue
import random
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fuzzing import Parts, Seed, mutate, mutate_case, run_case, sample_seeds, synthetic_seeds  # noqa: E402

WORKER = ROOT / "tests" / "fuzz_blender.py"


class CaseTimeout(BaseException):
    """Not an Exception, so the oracle's catch-all lets it through to the bound that raised it."""


ARMED = False  # the alarm only interrupts while a case runs (it may fire just after one has finished)


def _alarm(signum, frame):
    if ARMED:
        raise CaseTimeout


def bounded(seed: Seed, parts: Parts, seconds: float) -> str | None:
    """A MemoryError under the memory bound comes back from run_case as a finding like any other exception."""
    global ARMED
    outcome = None
    try:
        ARMED = True
        signal.setitimer(signal.ITIMER_REAL, seconds)
        outcome = run_case(seed.oracle, parts)
        ARMED = False
    except CaseTimeout:
        outcome = f"took longer than {seconds} s"
    finally:
        ARMED = False
        signal.setitimer(signal.ITIMER_REAL, 0)
    return outcome


def save(out: Path, seed: Seed, parts: Parts, finding: str, number: int) -> None:
    folder = out / f"finding-{number:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    for key, data in parts.items():
        (folder / f"mutant.{key}").write_bytes(data)
    with open(out / "findings.txt", "a", encoding="utf-8") as log:
        log.write(f"{folder.name}\t{seed.name}\t{finding}\n")


def seeded_loop(seeds: list[Seed], args: argparse.Namespace) -> dict[str, dict[str, float]]:
    """Each seed gets an equal share of the time: the next case goes to the seed that has used the least, so a
    slow animation-heavy seed does not starve the fast ones."""
    rng = random.Random(args.seed)
    stats = {s.name: {"cases": 0, "findings": 0, "seconds": 0.0} for s in seeds}
    deadline = time.monotonic() + args.minutes * 60
    total = findings = 0
    report = time.monotonic() + 30
    while time.monotonic() < deadline and (args.cases is None or total < args.cases):
        seed = min(seeds, key=lambda s: stats[s.name]["seconds"])
        parts = mutate_case(seed.parts, rng)
        started = time.monotonic()
        finding = bounded(seed, parts, args.case_seconds)
        stat = stats[seed.name]
        stat["seconds"] += time.monotonic() - started
        stat["cases"] += 1
        total += 1
        if finding:
            stat["findings"] += 1
            findings += 1
            save(args.out, seed, parts, finding, findings)
            print(f"FINDING in {seed.name}: {finding}", flush=True)
        if time.monotonic() > report:
            report += 30
            print(f"{total} cases, {findings} findings", flush=True)
    return stats


def atheris_loop(seeds: list[Seed], args: argparse.Namespace) -> None:
    """Atheris mutates the bytes of one part of one seed; our engine adds structure-aware mutations on top."""
    import atheris

    found = [0]

    def split(data: bytes) -> tuple[Seed, Parts]:
        seed = seeds[data[0] % len(seeds)] if data else seeds[0]
        keys = sorted(seed.parts)
        key = keys[data[1] % len(keys)] if len(data) > 1 else keys[0]
        return seed, dict(seed.parts, **{key: data[2:]})

    def one_input(data: bytes) -> None:
        seed, parts = split(data)
        finding = bounded(seed, parts, args.case_seconds)
        if finding:
            found[0] += 1
            save(args.out, seed, parts, finding, found[0])
            raise RuntimeError(f"{seed.name}: {finding}")

    def custom_mutator(data: bytes, max_size: int, seed: int) -> bytes:
        rng = random.Random(seed)
        if len(data) < 2 or rng.random() < 0.5:
            s = rng.randrange(len(seeds))
            key = rng.randrange(len(seeds[s].parts))
            body = seeds[s].parts[sorted(seeds[s].parts)[key]]
            return bytes([s, key]) + mutate(body, rng)
        return data[:2] + atheris.Mutate(data[2:], max(0, max_size - 2))

    atheris.instrument_all()  # every reader is loaded by now (each seed was read once), so all get coverage
    atheris.Setup(
        [sys.argv[0], f"-max_total_time={int(args.minutes * 60)}", "-max_len=2000000"],
        one_input,
        custom_mutator=custom_mutator,
    )
    atheris.Fuzz()


# --- --blender: the whole import, in Blender worker processes ------------------------------------------------

GRACE = 5.0  # seconds a worker gets beyond the case bound (its own checks, a loaded machine) before it is killed
STARTUP = 120.0  # seconds a worker may take to load Blender and the add-on


@dataclass
class Case:
    seed: Any  # fuzz_blender.TreeSeed
    files: dict[str, Any]
    mutation: str
    via: str  # "operator" or "batch"
    options: dict[str, Any]


def resident(pid: int) -> int:
    """Resident bytes of a process now (0 once it is gone)."""
    try:
        found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    except OSError:
        return 0
    return int(found.group(1)) * 1024 if found else 0


def tail(path: Path, limit: int = 20000) -> str:
    try:
        return path.read_bytes()[-limit:].decode("utf-8", "replace")
    except OSError:
        return ""


class Worker:
    """One bpy process kept for many cases (loading Blender costs seconds): a case in on stdin, its result back on
    stdout. Killed when a case outlives its bound or its resident memory passes the bound."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.process: subprocess.Popen | None = None
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.cases = 0

    def start(self) -> None:
        temp = self.folder / "tmp"  # Blender's temporary files and crash logs
        temp.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, TMPDIR=str(temp), TEMP=str(temp), TMP=str(temp))
        with open(self.folder / "worker.err", "w") as err:
            self.process = subprocess.Popen(
                [sys.executable, str(WORKER), "--worker", str(self.folder / "worker.log")],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=env,
                cwd=self.folder,
            )
        self.lines, self.cases = queue.Queue(), 0
        threading.Thread(target=self._pump, args=(self.process, self.lines), daemon=True).start()
        try:
            line = self.lines.get(timeout=STARTUP)
        except queue.Empty:
            line = None
        if line != "READY\n":
            self.kill()
            printed = tail(self.folder / "worker.err", 3000) + tail(self.folder / "worker.log", 3000)
            raise RuntimeError(f"the Blender worker did not start (status {self.process.returncode}):\n{printed}")

    @staticmethod
    def _pump(process: subprocess.Popen, lines: queue.Queue) -> None:
        for line in process.stdout:
            lines.put(line)
        lines.put(None)

    def run(self, message: dict[str, Any], seconds: float, memory: int) -> tuple[dict | None, tuple[str, str] | None]:
        """The worker's result, or the problem that ended it (crash, hang, memory)."""
        try:
            self.process.stdin.write(json.dumps(message) + "\n")
            self.process.stdin.flush()
        except OSError:
            return None, ("crash", self.death())
        deadline = time.monotonic() + seconds + GRACE
        while True:
            try:
                line = self.lines.get(timeout=0.05)
            except queue.Empty:
                if resident(self.process.pid) > memory:
                    self.kill(dump=True)
                    return None, ("memory", f"resident memory passed {memory / 2**20:.0f} MiB: worker killed")
                if time.monotonic() > deadline:
                    self.kill(dump=True)
                    return None, ("hang", f"no result after {seconds + GRACE:g} s: worker killed")
                continue
            if line is None:
                return None, ("crash", self.death())
            if line.startswith("RESULT "):
                self.cases += 1
                return json.loads(line[7:]), None

    def reap(self) -> tuple[int, int]:
        """Exit status and peak resident bytes of the finished process (wait4 gives both)."""
        _, status, usage = os.wait4(self.process.pid, 0)
        self.process.returncode = os.waitstatus_to_exitcode(status)
        return self.process.returncode, usage.ru_maxrss * 1024

    def death(self) -> str:
        code, peak = self.reap()
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit status {code}"
        return f"the worker died ({how}, peak resident {peak / 2**20:.0f} MiB)"

    def kill(self, dump: bool = False) -> None:
        """With ``dump``, the worker first prints its stacks (faulthandler, on SIGUSR1) so the finding says where."""
        if self.process is not None and self.process.returncode is None:
            if dump:
                self.process.send_signal(signal.SIGUSR1)
                time.sleep(0.5)
            self.process.kill()
            self.reap()

    def stop(self) -> None:
        """End of input: the worker unregisters the add-on and exits; killed if it does not."""
        if self.process is None:
            return
        if self.process.returncode is None:
            try:
                self.process.stdin.close()
                self.process.wait(timeout=20)
            except (OSError, subprocess.TimeoutExpired):
                self.kill()
        self.process = None

    def output(self) -> str:
        """What the dead worker printed on its last case, and Blender's crash log if it wrote one."""
        crashes = sorted((self.folder / "tmp").glob("*.crash.txt"))
        return tail(self.folder / "worker.log") + "".join(f"\n--- {p.name}\n{tail(p)}" for p in crashes)


class Campaign:
    """The cases the worker threads share: which seed next (each gets an equal share of the time), the bounds,
    the counts and the findings."""

    def __init__(self, seeds: list, args: argparse.Namespace, scratch: Path) -> None:
        from hostile import SECRET

        self.seeds, self.args, self.scratch, self.secret = seeds, args, scratch, SECRET
        self.memory = args.memory_mb * 2**20
        self.formats = set(args.format) if args.format else None
        self.lock = threading.Lock()
        self.stats = {s.name: {"cases": 0, "findings": 0, "seconds": 0.0} for s in seeds}
        self.claimed: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.via: Counter[str] = Counter()
        self.distinct: dict[str, list] = {}  # signature -> [count, first finding]
        self.total = self.findings = 0
        self.errors: list[BaseException] = []
        self.deadline = time.monotonic() + args.minutes * 60
        self.report = time.monotonic() + 30
        taken = [int(p.name[8:]) for p in args.out.glob("finding-[0-9]*") if p.name[8:].isdigit()]
        self.number = max(taken, default=0)  # earlier runs' findings stay

    def claim(self) -> tuple[Any, bool] | None:
        """The next seed, and whether this is its first case (which runs the seed itself, unmutated)."""
        with self.lock:
            done = sum(self.claimed.values())
            if self.errors or time.monotonic() >= self.deadline or (self.args.cases and done >= self.args.cases):
                return None
            seed = min(self.seeds, key=lambda s: (self.stats[s.name]["seconds"], self.claimed[s.name]))
            self.claimed[seed.name] += 1
            return seed, self.claimed[seed.name] == 1

    def make(self, seed: Any, first: bool, rng: random.Random, number: int) -> Case:
        """Every 1/fraction-th case of a worker goes through the batch converter (deterministic, so short runs
        still take both paths)."""
        from fuzz_blender import mutate_tree, operator_options

        files, mutation = (seed.files, "none (the seed)") if first else mutate_tree(seed, rng, self.formats)
        fraction = self.args.batch_fraction
        via = "batch" if int((number + 1) * fraction) > int(number * fraction) else "operator"
        options = operator_options(seed.model, rng) if via == "operator" else {}
        return Case(seed, files, mutation, via, options)

    def message(self, case: Case, root: Path) -> dict[str, Any]:
        from fuzz_blender import CANARY

        model = root / case.seed.model
        return {
            "model": str(model),
            "via": case.via,
            "options": case.options,
            "canaries": [str(root / CANARY), *case.seed.canaries],
            "target": str(root / "converted" / (model.stem + ".blend")),
            "seconds": self.args.case_seconds,
            "memory": self.memory,
            "secret": self.secret,
        }

    def drive(self, index: int) -> None:
        """One worker thread; a harness failure stops every thread."""
        try:
            self._drive(index)
        except BaseException as exc:
            with self.lock:
                self.errors.append(exc)

    def _drive(self, index: int) -> None:
        from fuzz_blender import write_tree

        rng = random.Random(f"{self.args.seed}:{index}")
        worker = Worker(self.scratch / f"worker-{index}")
        root = worker.folder / "case"
        number = 0
        try:
            while (claim := self.claim()) is not None:
                case = self.make(*claim, rng, number)
                number += 1
                if worker.process is None:
                    worker.start()
                shutil.rmtree(root, ignore_errors=True)
                write_tree(case.files, root)
                started = time.monotonic()
                result, failure = worker.run(self.message(case, root), self.args.case_seconds, self.memory)
                output = result["output"] if result else worker.output()
                problems = [tuple(p) for p in result["problems"]] if result else [where(failure, output)]
                self.record(case, time.monotonic() - started, problems, output)
                if problems or worker.cases >= self.args.restart_every:
                    worker.stop()  # a fresh process after a finding: nothing it left behind leaks into the next
        finally:
            worker.stop()
            shutil.rmtree(root, ignore_errors=True)

    def record(self, case: Case, seconds: float, problems: list, output: str) -> None:
        with self.lock:
            stat = self.stats[case.seed.name]
            stat["cases"] += 1
            stat["seconds"] += seconds
            self.total += 1
            self.via[case.via] += 1
            if problems:
                stat["findings"] += 1
                self.findings += 1
                self.kinds.update({kind for kind, _ in problems})
                self.number += 1
                line = save_tree(self.args.out, self.number, case, problems, output)
                self.distinct.setdefault(signature(problems), [0, f"finding-{self.number:04d}"])[0] += 1
                print(f"FINDING {line}", flush=True)
            if time.monotonic() > self.report:
                self.report += 30
                print(f"{self.total} cases, {self.findings} findings", flush=True)


def where(problem: tuple[str, str], output: str) -> tuple[str, str]:
    """A crash, hang or memory kill, with where the worker was in our code."""
    from fuzz_blender import stack_head

    head = stack_head(output)
    return (problem[0], f"{problem[1]} | {head}") if head else problem


def signature(problems: list) -> str:
    """Findings that are one bug: same kind, same place in our code (or the same message, numbers aside)."""
    kind, text = problems[0]
    place = re.search(r" at (\S+:\d+ in \S+)", text)
    return f"{kind} at {place[1]}" if place else f"{kind}: {re.sub(r'[0-9]+', 'N', text)[:140]}"


def save_tree(out: Path, number: int, case: Case, problems: list, output: str) -> str:
    """The case's whole tree (canaries included, so it replays as it ran), what it was, and what it printed."""
    from fuzz_blender import write_tree

    folder = out / f"finding-{number:04d}"
    shutil.rmtree(folder, ignore_errors=True)
    write_tree(case.files, folder)
    options = json.dumps(case.options)
    described = {
        "seed": case.seed.name,
        "model": case.seed.model,
        "via": case.via,
        "options": case.options,
        "mutation": case.mutation,
        "problems": problems,
        "replay": f"python tests/probe_import.py {folder / case.seed.model} '{options}'",
    }
    (folder / "case.json").write_text(json.dumps(described, indent=1))
    (folder / "output.txt").write_text(output)
    text = " ; ".join(f"{kind}: {' '.join(what.split())}" for kind, what in problems)
    line = f"{folder.name}\t{case.seed.name}\t{case.via}, {case.mutation}\t{text}"
    with open(out / "findings.txt", "a", encoding="utf-8") as log:
        log.write(line + "\n")
    return line


def blender_seeds(args: argparse.Namespace, scratch: Path) -> list:
    from fuzz_blender import FORMATS, tree_seeds

    samples = args.samples if args.samples.is_dir() else None
    seeds = tree_seeds(samples, scratch / "seeds", args.only)
    if args.format:  # seeds holding a file of these formats; only those files are mutated
        seeds = [s for s in seeds if any(FORMATS[Path(p).suffix.lower()] in args.format for p in s.mutable)]
    return seeds


def blender_main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if importlib.util.find_spec("bpy") is None:
        parser.error("--blender needs the bpy wheel (run this with the Python that has it)")
    if args.atheris:
        parser.error("--atheris drives the readers only; it does not combine with --blender")
    scratch = Path(tempfile.mkdtemp(prefix="fuzz-blender-"))
    try:
        seeds = blender_seeds(args, scratch)
        if not seeds:
            parser.error("no seeds to fuzz")
        jobs = max(1, args.jobs)
        print(
            f"fuzzing the whole import: {len(seeds)} seeds, {jobs} Blender workers, {args.minutes} min, "
            f"{args.case_seconds} s and {args.memory_mb} MiB resident per case",
            flush=True,
        )
        campaign = Campaign(seeds, args, scratch)
        started = time.monotonic()
        threads = [threading.Thread(target=campaign.drive, args=(i,), daemon=True) for i in range(jobs)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if campaign.errors:
            raise campaign.errors[0]
        blender_summary(campaign, time.monotonic() - started)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    if args.json:
        counts = {
            "cases": campaign.total,
            "findings": campaign.findings,
            "kinds": dict(campaign.kinds),
            "via": dict(campaign.via),
            "distinct": campaign.distinct,
            "seeds": campaign.stats,
        }
        args.json.write_text(json.dumps(counts, indent=1))
    return 1 if campaign.findings else 0


def blender_summary(campaign: Campaign, seconds: float) -> None:
    width = max(len(n) for n in campaign.stats)
    for name, s in campaign.stats.items():
        print(f"{name:<{width}}  {s['cases']:>6} cases  {s['findings']:>4} findings  {s['seconds']:6.0f} s")
    rate = campaign.total / seconds if seconds else 0.0
    via = ", ".join(f"{n} through the {v}" for v, n in sorted(campaign.via.items()))
    print(f"{campaign.total} cases in {seconds:.0f} s ({rate:.2f} cases/s; {via}), {campaign.findings} findings")
    for kind, count in campaign.kinds.most_common():
        print(f"  {kind}: {count}")
    if campaign.distinct:
        print("distinct findings (count, first saved, signature):")
    for name, (count, first) in sorted(campaign.distinct.items(), key=lambda item: -item[1][0]):
        print(f"  {count:>4}  {first}  {name}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to run (default 1)")
    parser.add_argument("--cases", type=int, help="stop after this many cases instead")
    parser.add_argument("--seed", default="io_ms3d_mdl", help="random seed of the loop (reproducible runs)")
    parser.add_argument(
        "--format", choices=("ms3d", "mdl", "vtf", "vmt", "pcx", "archive"), action="append", help="only these"
    )
    parser.add_argument("--case-seconds", type=float, default=10.0, help="time bound per case")
    parser.add_argument(
        "--memory-mb",
        type=int,
        help="memory bound: of the process's address space (default 2048), with --blender of each case's peak "
        "resident memory (default 1024)",
    )
    parser.add_argument("--samples", type=Path, default=ROOT.parent / "shared" / "samples")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--json", type=Path, help="write per-seed case and finding counts here")
    parser.add_argument("--atheris", action="store_true", help="coverage-guided, with atheris")
    parser.add_argument("--blender", action="store_true", help="the whole import in Blender (needs the bpy wheel)")
    parser.add_argument("--jobs", type=int, default=2, help="Blender worker processes (--blender; default 2)")
    parser.add_argument("--restart-every", type=int, default=100, help="cases per Blender worker before a fresh one")
    parser.add_argument(
        "--batch-fraction", type=float, default=0.2, help="share of cases run through scripts/batch_import.py"
    )
    parser.add_argument("--only", action="append", help="only seeds whose name contains this (--blender)")
    args = parser.parse_args(argv)
    if args.blender:
        args.memory_mb = args.memory_mb or 1024
        return blender_main(args, parser)
    args.memory_mb = args.memory_mb or 2048

    seeds = synthetic_seeds() + (sample_seeds(args.samples) if args.samples.is_dir() else [])
    if args.format:
        seeds = [s for s in seeds if s.name.rsplit(".", 1)[-1] in args.format]
    if not seeds:
        parser.error("no seeds to fuzz")
    for s in seeds:
        if run_case(s.oracle, s.parts) is not None:
            parser.error(f"seed {s.name} does not read cleanly; fix that first")
    limit = args.memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    signal.signal(signal.SIGALRM, _alarm)
    print(f"fuzzing {len(seeds)} seeds for {args.minutes} min, {args.case_seconds} s and {args.memory_mb} MB per case")

    if args.atheris:
        atheris_loop(seeds, args)
        return 0
    started = time.monotonic()
    stats = seeded_loop(seeds, args)
    cases = sum(s["cases"] for s in stats.values())
    findings = sum(s["findings"] for s in stats.values())
    width = max(len(n) for n in stats)
    for name, s in stats.items():
        print(f"{name:<{width}}  {s['cases']:>8} cases  {s['findings']:>4} findings  {s['seconds']:6.0f} s")
    print(f"{cases} cases in {time.monotonic() - started:.0f} s, {findings} findings")
    if args.json:
        args.json.write_text(json.dumps({"cases": cases, "findings": findings, "seeds": stats}, indent=1))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
