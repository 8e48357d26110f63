"""Writing outputs so that an interrupted run never leaves half a file under a final name, and nothing existing is
replaced unless asked: each output is written under a temporary name beside its final one, then moved into place."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from ..errors import printable
from ..filesystem.files import refused_name
from .no_links import Folder, output_folder
from .output_log import Identity, identity_of

TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")  # where Blender (and Python) put temporary files, per platform
NAME_MAX = 255  # bytes in one file name (ext4, XFS, APFS, Btrfs; NTFS counts 255 UTF-16 units, never fewer bytes)
PATH_MAX = 4096  # bytes in a path the OS takes in one call (Linux; macOS takes 1,024, Windows 32,767 units)


class OutputExists(Exception):
    def __init__(self, target: Path) -> None:
        super().__init__(f"output exists: {target} (use --overwrite)")


def partial_path(target: Path, token: str) -> Path:
    """The temporary name a target is written under: beside it (so the rename stays on one file system), hidden,
    and ending in the target's extension (the glTF exporter would otherwise append one). Where the target's name
    is so long that this would pass the file system's limit (Blender also adds ``@`` or ``1``), the name is stood
    for by a digest of it instead, so a legal output name never gets an illegal temporary one."""
    name = f".{target.name}.{token}.partial{target.suffix}"
    if len(os.fsencode(name)) + 1 > NAME_MAX:
        digest = hashlib.sha256(os.fsencode(target.name)).hexdigest()[:16]
        name = f".{digest}.{token}.partial{target.suffix}"
    return target.with_name(name)


class NameTooLong(Exception):
    """An output name or path the file system refuses; its message names the limit and is reported as it stands."""


def check_name_lengths(target: Path, root: Path | None) -> None:
    """Refuse, before any work, an output whose name (or a folder on its way below ``root``) is longer than a file
    system takes, or whose whole path is longer than the OS takes in one call."""
    below = target.relative_to(root).parts if root is not None and root in target.parents else (target.name,)
    for part in below:
        if refused_name(part):  # an archive's entry named with a character this OS refuses (on Windows: <>:"|?*)
            raise NameTooLong(f"the output name '{printable(part, 60)}' cannot be made here: {refused_name(part)}")
        size = len(os.fsencode(part))
        if size > NAME_MAX:
            shown = part if len(part) <= 60 else part[:40] + "…" + part[-12:]
            raise NameTooLong(
                f"the output name '{shown}' is {size:,} bytes; a file system takes at most {NAME_MAX} bytes in a name"
            )
    size = len(os.fsencode(str(target)))
    if size >= PATH_MAX:
        raise NameTooLong(f"the output path is {size:,} bytes; the OS takes paths of at most {PATH_MAX:,} bytes")


def refuse_existing(target: Path, overwrite: bool, replaces: Identity | None = None, root: Path | None = None) -> None:
    """Refuse an existing target, unless --overwrite, or --resume found it to be the file an earlier run made
    (``replaces``) and it still is. ``root``: the output folder, below which no step is a link."""
    with output_folder(target.parent, root) as folder:
        refuse_existing_in(folder, target.name, overwrite, replaces, target)


def refuse_existing_in(
    folder: Folder, name: str, overwrite: bool, replaces: Identity | None = None, shown: Path | None = None
) -> None:
    info = folder.lstat(name)
    if overwrite or info is None:  # (--overwrite replaces a link itself, never what it leads to)
        return
    if replaces is None or identity_of(info) != replaces:
        raise OutputExists(shown or folder.path / name)


def publish_in(folder: Folder, partial: str, name: str, overwrite: bool, replaces: Identity | None = None) -> None:
    """Move a finished file into place in one step, within one folder reached without links. Without --overwrite
    a hard link, which fails when the target exists, rather than a rename, which would replace a file that
    appeared meanwhile; an output an earlier run made is checked again just before it is replaced."""
    if overwrite:
        folder.replace(partial, name)
        return
    try:
        folder.link(partial, name)
    except OSError:  # the target exists (an earlier run's output?), or no hard links here: check, then rename
        refuse_existing_in(folder, name, overwrite, replaces)
        folder.replace(partial, name)
    else:
        folder.unlink(partial)


def publish(
    partial: Path, target: Path, overwrite: bool, replaces: Identity | None = None, root: Path | None = None
) -> None:
    """:func:`publish_in` by path (``partial`` lies beside ``target``)."""
    with output_folder(target.parent, root, create=False) as folder:
        publish_in(folder, partial.name, target.name, overwrite, replaces)


def discard_in(folder: Folder, partial: str) -> None:
    """Remove a temporary output, the ``@`` file Blender writes a .blend through and the ``.blend1`` backup it
    makes when the temporary .blend is saved twice (``--textures png``), where they are left."""
    for name in (partial, partial + "@", partial + "1"):
        with suppress(OSError):
            folder.unlink(name)


def discard(partial: Path, root: Path | None = None) -> None:
    """:func:`discard_in` by path: nothing is removed through a link, nor a folder made."""
    with suppress(OSError), output_folder(partial.parent, root, create=False) as folder:
        discard_in(folder, partial.name)


def write_text(path: Path, text: str, root: Path | None = None) -> None:
    """A whole text file (a report), written beside its place and moved there, never through a link."""
    with output_folder(path.parent, root) as folder:
        partial = partial_path(path, uuid.uuid4().hex[:12]).name
        try:
            descriptor = folder.create(partial)
            with os.fdopen(descriptor, "wb") as f:
                f.write(text.encode("utf-8"))
            publish_in(folder, partial, path.name, overwrite=True)
        finally:
            discard_in(folder, partial)


@contextmanager
def scratch_folder() -> Iterator[Path]:
    """A private temporary folder, removed at the end whatever happens. It is also Blender's temporary folder, in
    this process and in the workers: the bpy module leaves its session folder behind when its teardown is skipped
    (``needs_blender.leave``), and a killed worker leaves its own."""
    folder = Path(tempfile.mkdtemp(prefix="io_ms3d_mdl-"))
    saved = {name: os.environ.get(name) for name in TEMP_VARIABLES}
    os.environ.update(dict.fromkeys(TEMP_VARIABLES, str(folder)))
    try:
        yield folder
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(folder, ignore_errors=True)
