"""Where a decompile writes: fresh files in one output folder, never through a link, never over a file that was
there before (unless ``overwrite``), never half a file under a final name.

Every name comes from a stranger's model, so :meth:`Output.name` turns it into one safe file name (no folder
steps, no reserved or control characters, unique without regard to case); folders below the output folder are
reached one step at a time without following links (``filesystem.no_links``). Each file is written under a hidden
temporary name beside its final one and then hard-linked into place (which fails if the name was taken meanwhile),
or renamed over an existing file when ``overwrite`` is set.
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from ..errors import FormatError
from ..filesystem.no_links import Folder, open_root
from ..formats.stored_text import printable_name

_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*\x7f]')
_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(10)), *(f"lpt{i}" for i in range(10))}
NAME_LIMIT = 120  # characters of a file name's stem: a long name stays within every file system's 255 bytes


def safe_stem(name: str, fallback: str = "unnamed") -> str:
    """A file name stem from a name in a model: the last path step, unsafe characters as ``_``."""
    stem = re.split(r"[/\\]", printable_name(name))[-1].strip()
    stem = _UNSAFE.sub("_", stem).strip(". ") or fallback
    if stem.split(".")[0].lower() in _RESERVED:
        stem = "_" + stem
    return stem[:NAME_LIMIT]


class OutputExists(FormatError):
    def __init__(self, path: Path) -> None:
        super().__init__(path, None, "exists in the output folder (decompile with overwrite to replace it)")


class Output:
    """The output folder of one model's decompile: files named once each, written fresh."""

    def __init__(self, root: str | os.PathLike[str], overwrite: bool = False) -> None:
        self.root = Path(os.path.abspath(root))
        self.overwrite = overwrite
        self.files: list[str] = []  # relative paths written, in order
        self._taken: set[str] = set()
        self._folders: dict[str, Folder] = {}  # reached once each (without links), kept open until close()

    def folder(self, relative: str) -> Folder:
        """The folder ``relative`` (``a/b``) below the output folder, made when missing, each step reached from the
        one above without following a link (``filesystem.no_links``)."""
        found = self._folders.get(relative)
        if found is not None:
            return found
        if not relative:
            found = open_root(self.root)
        else:
            parent, _, name = relative.rpartition("/")
            found = self.folder(parent).folder(name)
        self._folders[relative] = found
        return found

    def close(self) -> None:
        for folder in self._folders.values():
            folder.close()
        self._folders.clear()

    def name(self, stem: str, suffix: str, folder: str = "") -> str:
        """A fresh relative path ``folder/stem suffix`` for a name from the model, made unique (``_2``, ``_3``...)
        among this decompile's files, ignoring case (the compiler's file system may ignore it)."""
        base = safe_stem(stem)
        candidate, n = base, 1
        while True:
            relative = f"{folder}/{candidate}{suffix}" if folder else f"{candidate}{suffix}"
            if relative.lower() not in self._taken:
                self._taken.add(relative.lower())
                return relative
            n += 1
            candidate = f"{base}_{n}"

    @contextmanager
    def open(self, relative: str) -> Iterator[BinaryIO]:
        """A binary stream for ``relative`` (from :meth:`name`), published when the block ends without error."""
        target = self.root / relative
        parent, _, name = relative.rpartition("/")
        folder = self.folder(parent)
        partial = f".{name}.{uuid.uuid4().hex[:12]}.partial"
        descriptor = folder.create(partial)
        try:
            with os.fdopen(descriptor, "wb", buffering=1 << 20) as stream:
                yield stream
            if self.overwrite:
                folder.replace(partial, name)
            else:
                try:
                    folder.link(partial, name)
                except FileExistsError:
                    raise OutputExists(target) from None
                except OSError:  # no hard links here: rename, after checking nothing is there
                    if folder.exists(name):
                        raise OutputExists(target) from None
                    folder.replace(partial, name)
        finally:
            with suppress(OSError):
                folder.unlink(partial)
        self.files.append(relative)

    def write(self, relative: str, data: bytes) -> None:
        with self.open(relative) as stream:
            stream.write(data)
