"""Fuzz every reader for as long as asked: ``python scripts/fuzz.py --minutes 10`` (no Blender needed).

The same seeds, mutation engine and oracles as ``tests/test_fuzz.py`` (``tests/fuzzing.py``), run in a loop over
all seeds. Each case runs under a time bound (SIGALRM) and the process under a memory bound (RLIMIT_AS), so a
hang or a runaway allocation is a finding like any escaped exception. Findings are written to ``--out`` as the
mutated files plus a line in ``findings.txt``. ``--atheris`` drives the same oracles with atheris's coverage-guided
mutator (``pip install atheris``) on top of ours; without it the loop is seeded and reproducible (``--seed``).
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fuzzing import Parts, Seed, mutate, mutate_case, run_case, sample_seeds, synthetic_seeds  # noqa: E402


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=1.0, help="how long to run (default 1)")
    parser.add_argument("--cases", type=int, help="stop after this many cases instead")
    parser.add_argument("--seed", default="io_ms3d_mdl", help="random seed of the loop (reproducible runs)")
    parser.add_argument("--format", choices=("ms3d", "mdl", "vtf", "vmt"), action="append", help="only these")
    parser.add_argument("--case-seconds", type=float, default=10.0, help="time bound per case")
    parser.add_argument("--memory-mb", type=int, default=2048, help="memory bound of the process (address space)")
    parser.add_argument("--samples", type=Path, default=ROOT.parent / "shared" / "samples")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"))
    parser.add_argument("--json", type=Path, help="write per-seed case and finding counts here")
    parser.add_argument("--atheris", action="store_true", help="coverage-guided, with atheris")
    args = parser.parse_args(argv)

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
