"""Source's compressed scalar types shared by the model and animation readers."""

from __future__ import annotations

import numpy as np


def half_to_float(bits: np.ndarray) -> np.ndarray:
    """Source's float16: IEEE half, except infinity reads as ±65504 and NaN as 0 (compressed_vector.h)."""
    values = np.asarray(bits, dtype="<u2").view(np.float16).astype(np.float64)
    values[np.isinf(values)] = np.sign(values[np.isinf(values)]) * 65504.0
    values[np.isnan(values)] = 0.0
    return values
