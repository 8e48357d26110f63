"""Writing outputs so that an interrupted run never leaves half a file under a final name, and nothing existing is
replaced unless asked: each output is written under a temporary name beside its final one, then moved into place."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from .no_links import Folder, output_folder
from .output_log import Identity, identity_of

TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")  # where Blender (and Python) put temporary files, per platform


class OutputExists(Exception):
    def __init__(self, target: Path) -> None:
        super().__init__(f"output exists: {target} (use --overwrite)")


def partial_path(target: Path, token: str) -> Path:
    """The temporary name a target is written under: beside it (so the rename stays on one file system), hidden,
    and ending in the target's extension (the glTF exporter would otherwise append one)."""
    return target.with_name(f".{target.name}.{token}.partial{target.suffix}")


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
