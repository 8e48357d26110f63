"""Bounds-checked little-endian reading over an in-memory file.

Every read checks the remaining size *before* touching the data, so a count or offset from a hostile file
turns into a :class:`FormatError` that names the block, not an ``IndexError`` or a huge allocation.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from ..budget import current_budget
from ..errors import FormatError
from .text import decode_text


def run_layout(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Runs of the given (non-negative) lengths laid end to end, without a Python loop: for every element, the
    run it belongs to and its place in that run (concatenated ``arange``s)."""
    run = np.repeat(np.arange(len(lengths)), lengths)
    return run, np.arange(len(run)) - np.repeat(np.cumsum(lengths) - lengths, lengths)


def row_max(values: np.ndarray) -> np.ndarray:
    """(N, D) → (N,) each row's largest value, a column at a time: numpy reduces a short last axis per row (for D = 4
    ten times slower than D passes over whole columns)."""
    if values.shape[1] == 0:
        return np.full(len(values), -np.inf)
    out = values[:, 0].copy()
    for column in range(1, values.shape[1]):  # (a loop over the few columns)
        np.maximum(out, values[:, column], out=out)
    return out


def columns_falling(values: np.ndarray) -> bool:
    """Whether no column of (S, N) ``values`` rises from one row to the next: each vertex's weight slots (a row a
    slot) already in falling order, so that a stable sort by the negated values would leave them as they are."""
    return bool((values[:-1] >= values[1:]).all())


def renumbered(indices: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The values ``indices`` use (all in ``0..size-1``, checked by the caller), in ascending order, and
    ``indices`` renumbered to their places in it (int32): ``np.unique(..., return_inverse=True)`` without its
    sort, since the values are bounded."""
    in_use = np.zeros(size, dtype=bool)
    in_use[indices] = True
    used = np.flatnonzero(in_use)
    renumber = np.zeros(size, dtype=np.int32)
    renumber[used] = np.arange(len(used), dtype=np.int32)
    return used, renumber[indices]


def owned_copy(array: np.ndarray) -> np.ndarray:
    """A writable copy of ``array`` that owns its memory, made as bytes when it is contiguous: numpy copies
    structured records field by field (25× slower on a VVD pool, 5× on a three-record header)."""
    if array.size == 0 or not array.flags.c_contiguous:  # (a memoryview cannot cast a shape with a zero)
        return array.copy()
    return np.frombuffer(bytearray(array.data.cast("B")), dtype=array.dtype).reshape(array.shape)


class Truncated(FormatError):
    """The data ended before a read could be satisfied; optional blocks catch this one."""


class Cursor:
    """A read position over ``data`` that knows which file and which block it is in."""

    def __init__(self, data: bytes | bytearray | memoryview, path: str | None = None) -> None:
        self.data = memoryview(data).cast("B")
        self._bytes = data if isinstance(data, bytes) else None  # searched in place for string terminators
        self.path = path
        self.pos = 0
        self.block = "file"
        # Bytes copied out so far, against the budget: tables shared by many records must not multiply reads.
        self.copied = 0
        self.copy_limit = current_budget().table_bytes(len(self.data))

    def charge(self, nbytes: int, what: str) -> None:
        """Count ``nbytes`` read for ``what`` against the copy budget (every read here does; a reader that gathers
        data later, in bulk, charges it where it finds it)."""
        self.copied += nbytes
        if self.copied > self.copy_limit:
            raise current_budget().exceeded(
                self.path, f"data read for the {what} (records sharing tables)", self.copied, self.copy_limit, "bytes"
            )

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def remaining(self) -> int:
        return self.size - self.pos

    @contextmanager
    def section(self, name: str) -> Iterator[None]:
        """Name the block being read, so errors say where in the format they happened."""
        previous, self.block = self.block, name
        try:
            yield
        finally:
            self.block = previous

    def error(self, reason: str, offset: int | None = None) -> FormatError:
        return FormatError(self.path, self.pos if offset is None else offset, reason)

    def need(self, nbytes: int, what: str) -> None:
        if nbytes < 0 or nbytes > self.remaining:
            raise Truncated(
                self.path,
                self.pos,
                f"file ends inside the {self.block}: {what} needs {nbytes} bytes but only {self.remaining} remain",
            )

    def bytes(self, nbytes: int, what: str) -> bytes:
        self.need(nbytes, what)
        self.charge(nbytes, what)
        out = bytes(self.data[self.pos : self.pos + nbytes])
        self.pos += nbytes
        return out

    def unpack(self, fmt: str, what: str) -> tuple:
        st = struct.Struct("<" + fmt)
        self.need(st.size, what)
        out = st.unpack_from(self.data, self.pos)
        self.pos += st.size
        return out

    def u16(self, what: str) -> int:
        return self.unpack("H", what)[0]

    def i32(self, what: str) -> int:
        return self.unpack("i", what)[0]

    def f32(self, what: str) -> float:
        return self.unpack("f", what)[0]

    def array_at(self, dtype: np.dtype, offset: int, count: int, what: str) -> np.ndarray:
        """``count`` records at an absolute ``offset``, checked to lie inside the data before anything is read, in
        memory of their own (copied as bytes: see :func:`owned_copy`)."""
        view = self.view_at(dtype, offset, count, what)  # checks the bounds and the budget
        return self._owned(offset, view.nbytes, dtype, count)

    def _owned(self, offset: int, nbytes: int, dtype: np.dtype, count: int) -> np.ndarray:
        """``count`` records from ``nbytes`` checked bytes at ``offset``, copied as bytes (see :func:`owned_copy`;
        straight from the file's bytes, which costs less than going through a view for the short tables)."""
        return np.frombuffer(bytearray(self.data[offset : offset + nbytes]), dtype=dtype, count=count)

    def view_at(self, dtype: np.dtype, offset: int, count: int, what: str) -> np.ndarray:
        """Like ``array_at`` without the copy: a read-only view for reading at once, never kept (it would keep the
        whole file's bytes alive). Headers walked once cost more to copy than to read."""
        dtype = np.dtype(dtype)
        if count < 0:
            raise self.error(f"negative count {count} for {what}", offset)
        if offset < 0 or offset + dtype.itemsize * count > self.size:
            raise self.error(
                f"{what}: {count} × {dtype.itemsize} bytes at offset {offset} run past the end of the "
                f"{self.size}-byte file",
                offset,
            )
        self.charge(dtype.itemsize * count, what)
        return np.frombuffer(self.data, dtype=dtype, count=count, offset=offset)

    def records_at(self, dtype: np.dtype, offset: int, count: int, what: str) -> Iterator[tuple[int, np.void]]:
        """Like ``array_at``, each record with its own offset: formats store names and nested lists relative to
        the record that points at them."""
        records = self.view_at(dtype, offset, count, what)
        size = records.dtype.itemsize
        return ((offset + i * size, r) for i, r in enumerate(records))

    def bytes_at(self, offset: int, nbytes: int, what: str) -> bytes:
        if offset < 0 or offset + nbytes > self.size:
            raise self.error(
                f"{what}: {nbytes} bytes at offset {offset} run past the end of the {self.size}-byte file", offset
            )
        self.charge(nbytes, what)
        return bytes(self.data[offset : offset + nbytes])

    def string_at(self, offset: int, what: str, limit: int = 4096, optional: bool = False) -> str:
        """A zero-terminated string at an absolute offset (at most ``limit`` bytes; an offset of 0 means none).

        ``optional`` strings (fields old compilers leave as junk) read as "" instead of failing when out of range.
        """
        if offset == 0:
            return ""
        if offset < 0 or offset >= self.size:
            if optional:
                return ""
            raise self.error(f"{what}: string offset {offset} is outside the {self.size}-byte file", offset)
        stop = min(offset + limit, self.size)
        if self._bytes is not None:  # without copying ``limit`` bytes to look for the end of a short name
            end = self._bytes.find(b"\0", offset, stop)
            self.charge(stop - offset if end < 0 else end - offset + 1, what)
            return decode_text(self._bytes[offset : stop if end < 0 else end])
        raw = bytes(self.data[offset:stop])
        end = raw.find(b"\0")
        self.charge(len(raw) if end < 0 else end + 1, what)
        return decode_text(raw if end < 0 else raw[:end])

    def array(self, dtype: np.dtype, count: int, what: str) -> np.ndarray:
        """``count`` packed records in one ``np.frombuffer``, copied so the result owns its memory."""
        dtype = np.dtype(dtype)
        nbytes = dtype.itemsize * count
        if count < 0:
            raise self.error(f"negative count {count} for {what}")
        self.need(nbytes, f"{count} × {dtype.itemsize}-byte {what}")
        self.charge(nbytes, what)
        out = self._owned(self.pos, nbytes, dtype, count)
        self.pos += nbytes
        return out
