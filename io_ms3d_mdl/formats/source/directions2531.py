"""Bloodlines' two tables of unit directions, rebuilt from the rule that lays them out.

Bloodlines (MDL 2531) stores a direction as a place in a table rather than as three numbers: a compressed vertex's
normal is one byte (a 202-entry table), an unskinned vertex's normal and both directions of a flex's vertex delta
are 16-bit *byte offsets* into a 5,314-entry table of 12-byte float vectors (so every stored value is a multiple of
12). Both tables are rings of latitude from -Z to +Z: ring ``k`` of ``R`` lies at ``k·180°/R`` from -Z and holds
``4·floor(N/4·sin θ + 0.9)`` entries (one at each pole), starting at +X and turning towards +Y.

- bytes: ``R`` = 12 (15° apart), ``N`` = 24: 1, 8, 12, 20, 24, 24, 24, 24, 24, 20, 12, 8, 1 entries (202);
- words: ``R`` = 64, ``N`` = 128: 1, 8, 16, 20, 28 ... a 128-entry equator ... 1 (5,314).

The rule was read off the tables the game's own ``engine.dll`` carries (its vertex accessors index them exactly so);
``tests/test_source_bloodlines_directions.py`` rebuilds both and compares them entry by entry with the game's when
the Unofficial Patch's snapshot is fetched, and holds the ring sizes as plain facts otherwise.
"""

from __future__ import annotations

from functools import cache

import numpy as np

WORD_STRIDE = 12  # bytes per entry of the word table: a stored word is an entry's byte offset


def ring_sizes(rings: int, equator: int) -> np.ndarray:
    """Entries per ring, from -Z (ring 0) to +Z (ring ``rings``)."""
    theta = np.arange(rings + 1) * (np.pi / rings)
    sizes = 4 * np.floor(equator / 4 * np.sin(theta) + 0.9).astype(np.int64)
    sizes[[0, -1]] = 1
    return sizes


def direction_table(rings: int, equator: int) -> np.ndarray:
    """The (N, 3) float32 unit directions, ring after ring."""
    sizes = ring_sizes(rings, equator)
    ring = np.repeat(np.arange(rings + 1), sizes)
    first = np.cumsum(sizes) - sizes
    turn = 2 * np.pi * (np.arange(len(ring)) - first[ring]) / sizes[ring]
    theta = ring * (np.pi / rings)
    across = np.sin(theta)
    table = np.stack([across * np.cos(turn), across * np.sin(turn), -np.cos(theta)], axis=1)
    return table.astype(np.float32)


@cache
def byte_table() -> np.ndarray:
    """The 202 directions a compressed vertex's normal byte names."""
    return direction_table(12, 24)


@cache
def word_table() -> np.ndarray:
    """The 5,314 directions a 16-bit byte offset names (unskinned normals, flex deltas)."""
    return direction_table(64, 128)


def bad_words(words: np.ndarray) -> np.ndarray:
    """Where ``words`` are not the byte offset of an entry of :func:`word_table`."""
    words = np.asarray(words, dtype=np.int64)
    return (words % WORD_STRIDE != 0) | (words >= WORD_STRIDE * len(word_table()))


def from_words(words: np.ndarray) -> np.ndarray:
    """The directions at byte offsets ``words`` (checked with :func:`bad_words` first)."""
    return word_table()[np.asarray(words, dtype=np.int64) // WORD_STRIDE]
