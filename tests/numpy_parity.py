"""What every reader and converter makes of the fuzz seeds and their mutants, as a small JSON summary per case.

``tests/test_numpy_parity.py`` runs this under numpy 1 (the 4.2–5.0 environments) and numpy 2 (5.1 and later) and
compares: numpy 2 changed how Python scalars and numpy scalars promote (NEP 50: ``np.int32(x) + 1`` stays 32-bit
and wraps, ``uint8_array + 300`` raises), which copies ``np.array(copy=False)`` refuses, and what ``np.round`` takes.
A reader that computes an offset or a count from a field read out of a file is where such a change would hide, and
a hostile file is what reaches it. Run: ``python tests/numpy_parity.py CASES_PER_SEED [OUT.json]``.
"""

from __future__ import annotations

import json
import os
import random
import re
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
TEMPORARY = re.compile(re.escape(tempfile.gettempdir()) + r"[/\\][^/\\]+")
sys.path[:0] = [str(HERE.parent), str(HERE)]


def summary(value: object) -> object:
    """Arrays become (dtype kind, shape, sum, min, max) in float64; everything else is walked or kept as text."""
    if isinstance(value, np.ndarray):
        if value.dtype.names or value.size == 0 or value.dtype.kind not in "biuf":
            return ["array", value.dtype.kind, list(value.shape)]
        data = value.astype(np.float64, copy=False)
        with np.errstate(all="ignore"):
            finite = data[np.isfinite(data)]
            total = float(finite.sum()) if finite.size else 0.0
            low, high = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        return ["array", value.dtype.kind, list(value.shape), total, low, high, int(np.isfinite(data).sum())]
    if isinstance(value, np.generic):
        return summary(np.asarray(value)) if value.dtype.kind in "biuf" else str(value)
    if isinstance(value, (list, tuple)):
        return [summary(v) for v in value]
    if isinstance(value, dict):
        return {str(k): summary(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if hasattr(value, "__dataclass_fields__"):
        return {name: summary(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, str):  # an oracle's temporary folder differs from run to run
        return TEMPORARY.sub("<tmp>", value)
    if isinstance(value, (int, float, bool)) or value is None:
        return value
    return type(value).__name__


def run_case(oracle, parts: dict[str, bytes]) -> object:
    from fuzzing import expected_errors

    try:
        with np.errstate(all="ignore"):
            scene = oracle(parts)
    except expected_errors() as exc:
        return ["refused", str(exc)]
    except Exception as exc:  # the comparison reports it; the fuzz tests judge it
        return ["crashed", f"{type(exc).__name__}: {exc}"[:300]]
    return ["read", summary(scene)]


def main(per_seed: int) -> dict[str, object]:
    from fuzzing import mutate_case, sample_seeds, synthetic_seeds

    samples = Path(os.environ.get("IO_MS3D_MDL_SHARED", HERE.parent.parent / "shared")) / "samples"
    seeds = synthetic_seeds() + (sample_seeds(samples) if samples.is_dir() else [])
    out: dict[str, object] = {"numpy": np.__version__}
    for seed in seeds:
        rng = random.Random(f"numpy parity {seed.name}")
        out[f"{seed.name} #0"] = run_case(seed.oracle, seed.parts)
        for i in range(1, per_seed + 1):
            out[f"{seed.name} #{i}"] = run_case(seed.oracle, mutate_case(seed.parts, rng))
    return out


if __name__ == "__main__":
    result = main(int(sys.argv[1]) if len(sys.argv) > 1 else 60)
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(result))
    else:
        json.dump(result, sys.stdout)
