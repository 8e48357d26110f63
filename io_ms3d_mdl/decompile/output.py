"""Where a decompile writes: fresh files in one output folder, never through a link, never over a file that was
there before (unless ``overwrite``), never half a file under a final name.

Every name comes from a stranger's model, so :meth:`Output.name` turns it into one safe file name (no folder
steps, no reserved or control characters, unique without regard to case); folders below the output folder are
reached one step at a time without following links (``filesystem.no_links``). Each file is written under a hidden
temporary name beside its final one and then hard-linked into place (which fails if the name was taken meanwhile),
or renamed over an existing file when ``overwrite`` is set. A ``staged`` output (a whole decompile) keeps every file
under its temporary name until :meth:`Output.publish`: a decompile refused half-way (a budget, a broken section)
leaves nothing behind, not even the folders it made. Its temporary files are made and written by a second thread
(``filesystem.written_behind``) while the next ones' text is built; :meth:`Output.publish` waits for it.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from ..budget import OUTPUT_FILE_COST, current_budget
from ..errors import FormatError
from ..filesystem.no_links import Folder, LinkInTheWay, is_link, open_root
from ..filesystem.written_behind import BehindFile, BehindStream, WrittenBehind, temporary_name
from ..formats.stored_text import printable_name

_UNSAFE = re.compile(r'[\x00-\x1f<>:"/\\|?*\x7f]')
_RESERVED = {
    "con", "prn", "aux", "nul", "conin$", "conout$",
    *(f"{port}{n}" for port in ("com", "lpt") for n in (*"0123456789", "\u00b9", "\u00b2", "\u00b3")),
}  # fmt: skip
NAME_LIMIT = 120  # characters of a file name's stem: a long name stays within every file system's 255 bytes
NAME_BYTES = 160  # and UTF-8 bytes (120 emoji are 480): room left for ``_NN``, the suffix and the partial name


def safe_stem(name: str, fallback: str = "unnamed") -> str:
    """A file name stem from a name in a model: the last path step, unsafe characters as ``_``."""
    stem = re.split(r"[/\\]", printable_name(name))[-1].strip()
    stem = _UNSAFE.sub("_", stem).strip(". ") or fallback
    if stem.split(".")[0].rstrip(" ").lower() in _RESERVED:
        stem = "_" + stem
    stem = stem[:NAME_LIMIT]
    while len(stem.encode("utf-8")) > NAME_BYTES:
        stem = stem[:-1]
    return stem


def check_output_root(out_dir: str | os.PathLike[str], roots: tuple[str, ...]) -> None:
    """The output folder, when it lies inside a folder the model is read from (its own, its game's), must be
    reached there without a link: a pack shipping ``decompiled`` (or a step on the way to it) as a link to
    elsewhere would have the sources written there. The batch checks its ``-o`` the same way
    (``cli.batch.check_output_folder``); below the output folder ``no_links`` sees to every step."""
    lexical = Path(os.path.abspath(out_dir))
    for root in roots:
        folder = Path(root)
        if not (lexical == folder or folder in lexical.parents):
            continue
        step = folder
        for part in lexical.relative_to(folder).parts:
            step = step / part
            if is_link(step):
                raise LinkInTheWay(step)


class OutputExists(FormatError):
    def __init__(self, path: Path) -> None:
        super().__init__(path, None, "exists in the output folder (decompile with overwrite to replace it)")


class Output:
    """The output folder of one model's decompile: files named once each, written fresh."""

    def __init__(
        self,
        root: str | os.PathLike[str],
        overwrite: bool = False,
        input_bytes: Callable[[], int] | None = None,
        staged: bool = False,
    ) -> None:
        self.root = Path(os.path.abspath(root))
        self.overwrite = overwrite
        self.input_bytes = input_bytes  # the bytes read so far: what may be written is relative to it
        self.staged = staged  # files wait under their temporary names until publish()
        self.written = 0  # bytes over all files, charged before each write
        self.granted = 0  # bytes allowed beyond the budget's output_bytes (animation text: :meth:`grant`)
        self.files: list[str] = []  # relative paths written, in order
        self._taken: set[str] = set()
        self._folders: dict[str, Folder] = {}  # reached once each (without links), kept open until close()
        self._root_made = False
        self._waiting: list[tuple[Folder, str, str]] = []  # (folder, temporary name, relative path), in order
        self._behind = WrittenBehind() if staged else None
        self._made_behind: dict[str, BehindFile] = {}  # the temporary files of ``_behind`` by name

    def folder(self, relative: str) -> Folder:
        """The folder ``relative`` (``a/b``) below the output folder, made when missing, each step reached from the
        one above without following a link (``filesystem.no_links``)."""
        found = self._folders.get(relative)
        if found is not None:
            return found
        if not relative:
            self._root_made = not os.path.lexists(self.root)
            found = open_root(self.root)
            found.made = self._root_made
        else:
            parent, _, name = relative.rpartition("/")
            found = self.folder(parent).folder(name)
        self._folders[relative] = found
        return found

    def close(self) -> None:
        """Done: what still waits for :meth:`publish` (a staged decompile that failed) is removed, with the folders
        this output made that are left empty; then every folder is let go."""
        if self._behind is not None:
            self._behind.close()  # (what it was asked to do is done: only then are its files looked at)
        for folder, partial, _relative in self._waiting:
            file = self._made_behind.get(partial)
            if file is None or file.made:  # (a name never made is left alone, whoever holds it)
                with suppress(OSError):
                    folder.unlink(partial)
        self._waiting.clear()
        self._made_behind.clear()
        self._remove_made_folders()  # (the empty ones: all when nothing was published, or one ``expect`` made)
        for folder in self._folders.values():
            folder.close()
        self._folders.clear()

    def _remove_made_folders(self) -> None:
        for relative in sorted(self._folders, key=lambda r: -r.count("/")):  # the deepest first
            if relative and self._folders[relative].made:
                parent, _, name = relative.rpartition("/")
                with suppress(OSError):
                    self._folders[parent].rmdir(name)
        if self._root_made:
            with suppress(OSError):
                os.rmdir(self.root)

    def publish(self) -> None:
        """A staged output's files under their final names, in the order they were written. ``OutputExists`` when a
        name was taken meanwhile: the files not yet in place are removed, and (unless ``overwrite``, which may
        have replaced a file) so are the ones this call put in place. A staged output's files are all written
        first (an error writing one is raised here)."""
        if self._behind is not None:
            self._behind.finish()
        waiting, self._waiting = self._waiting, []
        placed: list[tuple[Folder, str]] = []
        try:
            for folder, partial, relative in waiting:
                self._put_in_place(folder, partial, relative)  # (the temporary name goes, whatever happens)
                placed.append((folder, relative))
        except BaseException:
            for folder, partial, _relative in waiting[len(placed) + 1 :]:
                with suppress(OSError):
                    folder.unlink(partial)
            if not self.overwrite:
                for folder, relative in placed:
                    with suppress(OSError):
                        folder.unlink(relative.rpartition("/")[2])
                placed.clear()
            raise
        finally:
            self.files.extend(relative for _folder, relative in placed)

    def expect(self, relative: str, count: int) -> None:
        """About ``count`` files are coming in the folder ``relative``: a staged output's thread makes them ahead
        while it has nothing else to do."""
        if self._behind is not None and count > 0:
            self._behind.expect(self.folder(relative), count)

    def name(self, stem: str, suffix: str, folder: str = "") -> str:
        """A fresh relative path ``folder/stem suffix`` for a name from the model, made unique (``_2``, ``_3``...)
        among this decompile's files, ignoring case (the compiler's file system may ignore it)."""
        base = safe_stem(stem)
        candidate, n = base, 1
        while True:
            relative = f"{folder}/{candidate}{suffix}" if folder else f"{candidate}{suffix}"
            key = unicodedata.normalize("NFC", relative).casefold()  # as NTFS and APFS compare names
            if key not in self._taken:
                self._taken.add(key)
                return relative
            n += 1
            candidate = f"{base}_{n}"

    @contextmanager
    def open(self, relative: str) -> Iterator[BinaryIO]:
        """A binary stream for ``relative`` (from :meth:`name`), published when the block ends without error."""
        target = self.root / relative
        parent, _, name = relative.rpartition("/")
        folder = self.folder(parent)
        self.charge(OUTPUT_FILE_COST, target)
        # Said now, not after the whole decompile; a folder this output made was empty then (a file put there
        # since is met by the hard link, which never replaces it), so its names are not looked up one by one.
        if not (self.overwrite or folder.made) and folder.exists(name):
            raise OutputExists(target)
        if self._behind is not None:
            yield from self._open_behind(folder, relative, target)
            return
        partial = temporary_name()
        descriptor = folder.create(partial)
        try:
            with os.fdopen(descriptor, "wb", buffering=1 << 20) as stream:
                yield _Charged(stream, self, target)
        except BaseException:
            with suppress(OSError):
                folder.unlink(partial)
            raise
        self._waiting.append((folder, partial, relative))
        if not self.staged:
            self.publish()

    def _open_behind(self, folder: Folder, relative: str, target: Path) -> Iterator[BinaryIO]:
        """A staged output's file: made (or taken from those made ahead), written and closed by the thread of
        ``written_behind``."""
        file = self._behind.take(folder) or BehindFile(folder, temporary_name())
        partial = file.name
        self._made_behind[partial] = file
        stream = BehindStream(self._behind, file)
        try:
            yield _Charged(stream, self, target)
            stream.flush(last=True)
        except BaseException:
            self._behind.remove(file)
            del self._made_behind[partial]
            raise
        self._waiting.append((folder, partial, relative))

    def _put_in_place(self, folder: Folder, partial: str, relative: str) -> None:
        """The temporary file under its final name: a hard link, which fails when the name is taken (or, with
        ``overwrite``, a rename over it); the temporary name goes either way."""
        name = relative.rpartition("/")[2]
        target = self.root / relative
        try:
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

    def charge(self, amount: int, target: Path | str) -> None:
        """Count ``amount`` bytes against the output budget before they are written (``budget.output_bytes``)."""
        self.written += amount
        self.check(0, target)

    def grant(self, amount: int) -> None:
        """Allow ``amount`` more bytes: the animations' own allowance (``budget.animation_text_bytes``), given when
        they are about to be written, after the meshes (which cannot spend it)."""
        self.granted += amount

    def check(self, pending: int, target: Path | str) -> None:
        """Refuse when what was written plus ``pending`` bytes still being built (a QC's text) passes the budget."""
        budget = current_budget()
        read = self.input_bytes() if self.input_bytes is not None else 0
        amount = self.written + pending
        limit = budget.output_bytes(read) + self.granted
        budget.check(target, "output written by the decompile", amount, limit, "bytes")

    def checker(self, target: str) -> Callable[[int], None]:
        """``check`` for one file's text still being built (``QcWriter(check=...)``)."""
        return lambda pending: self.check(pending, self.root / target)

    def write(self, relative: str, data: bytes) -> None:
        with self.open(relative) as stream:
            stream.write(data)


class _Charged:
    """A stream that charges every write to its ``Output``'s budget first: an over-budget write never reaches the
    disk, and the partial file is removed."""

    def __init__(self, stream: BinaryIO, output: Output, target: Path) -> None:
        self._stream = stream
        self._output = output
        self._target = target

    def write(self, data: bytes) -> int:
        self._output.charge(memoryview(data).nbytes, self._target)  # (bytes, not items, of an array)
        return self._stream.write(data)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)
