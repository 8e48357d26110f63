"""The vectorised number text (``float_chars``) is byte for byte the ``%``-formatted text (``float_tokens``) the
writers used before, on random and special float32 values."""

import numpy as np

from io_ms3d_mdl.formats.float_text import WIDTH, float_chars, float_tokens


def as_text(chars: np.ndarray) -> list[str]:
    assert chars.dtype == np.uint8 and chars.shape[1] <= WIDTH
    return np.ascontiguousarray(chars).view(f"S{chars.shape[1]}").ravel().astype(str).tolist()


def special_values() -> np.ndarray:
    tiny = np.float32(1.17549435e-38)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 1e-4, 1e-5, 9.9999996, 99999.99, 999999.9, 1234567.5, 16777216.0]
    values += [1.4e-45, -1.4e-45, 3e-42, tiny, -tiny, 3.4028235e38, -3.4028235e38, 1e22, 1e23, 1e-22, 1e-23]
    values += [10.0**i for i in range(-10, 11)] + [-(10.0**i) for i in range(-10, 11)]
    values += [np.inf, -np.inf, np.nan]
    return np.array(values, dtype=np.float32)


def shortest_digits() -> np.ndarray:
    """Values whose shortest round-tripping text has 6, 7, 8 and 9 significant digits (integers and fractions)."""
    rng = np.random.default_rng(7)
    mantissas = rng.integers(10**5, 10**9, 20000)
    exponents = rng.integers(-12, 12, 20000)
    return (mantissas * 10.0 ** (exponents - 8.0)).astype(np.float32)


def test_float_chars_equals_percent_formatting_on_random_and_special_values():
    rng = np.random.default_rng(32)
    values = np.concatenate(
        [
            special_values(),
            shortest_digits(),
            rng.standard_normal(50000).astype(np.float32),
            (rng.standard_normal(50000) * 1000).astype(np.float32),
            rng.integers(0, 2**32, 50000, dtype=np.uint64).astype(np.uint32).view(np.float32),  # every bit pattern
            (10.0 ** rng.uniform(-46, 38.5, 50000) * rng.choice([-1, 1], 50000)).astype(np.float32),
            np.arange(-3000, 3000, dtype=np.float32) / 8,  # exact binary fractions: ties in decimal
            np.arange(-3000, 3000, dtype=np.float32) / 1000,
            np.arange(1, 20000, dtype=np.float32) * 1024,  # integers up to 2e7
            np.arange(1, 5000, dtype=np.float32) * np.float32(1e-45),  # subnormals
        ]
    )
    values = np.where(rng.random(values.size) < 0.001, np.nan, values).astype(np.float32)
    tokens, bad = float_tokens(values)
    chars, bad_chars = float_chars(values)
    assert bad_chars == bad
    assert as_text(chars) == tokens.tolist()
    part = values[::5]  # fewer values: the one-gather path (the whole set takes the per-layout runs)
    assert as_text(float_chars(part)[0]) == float_tokens(part)[0].tolist()
    digits = {len(t.lstrip("-").split("e")[0].replace(".", "").lstrip("0")) for t in tokens.tolist()}
    assert {6, 7, 8, 9} <= digits


def test_float_chars_repeated_values_and_shapes():
    values = np.tile(np.array([[0.25, -1.5e-7, 3.0]], np.float32), (2000, 1))  # deduplicated path
    chars, bad = float_chars(values)
    assert chars.shape[0] == 6000 and bad == 0
    assert as_text(chars) == float_tokens(values)[0].tolist()
    assert float_chars(np.zeros(0, np.float32))[0].shape[0] == 0


def test_decimal_exponents_next_to_every_power_of_ten():
    """The decimal exponent the digits are placed by (found from the binary one, then one comparison with a power
    of ten) is the exact one for the float32 values nearest every power of ten, normal and subnormal."""
    from decimal import Decimal

    from io_ms3d_mdl.formats.float_text import _scaled

    values = []
    for k in range(-45, 39):
        at = np.float32(10.0**k)
        values += [np.nextafter(at, np.float32(np.inf)) if at == 0 else at]
        for direction in (np.float32(0), np.float32(np.inf)):
            step = at
            for _ in range(8):
                step = np.nextafter(step, direction)
                values.append(step)
    values = np.array([v for v in values if 0 < v < np.inf], dtype=np.float32)
    exact = [Decimal(float(v)).adjusted() for v in values]
    assert _scaled(values)[2].tolist() == exact
    assert _scaled(-values)[2].tolist() == exact
