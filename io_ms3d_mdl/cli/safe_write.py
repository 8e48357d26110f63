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

from .output_log import Identity, still_ours

TEMP_VARIABLES = ("TMPDIR", "TEMP", "TMP")  # where Blender (and Python) put temporary files, per platform


class OutputExists(Exception):
    def __init__(self, target: Path) -> None:
        super().__init__(f"output exists: {target} (use --overwrite)")


def partial_path(target: Path, token: str) -> Path:
    """The temporary name a target is written under: beside it (so the rename stays on one file system), hidden,
    and ending in the target's extension (the glTF exporter would otherwise append one)."""
    return target.with_name(f".{target.name}.{token}.partial{target.suffix}")


def refuse_existing(target: Path, overwrite: bool, replaces: Identity | None = None) -> None:
    """Refuse an existing target, unless --overwrite, or --resume found it to be the file an earlier run made
    (``replaces``) and it still is."""
    if overwrite or not os.path.lexists(target):
        return
    if replaces is None or still_ours(target, [replaces]) is None:
        raise OutputExists(target)


def publish(partial: Path, target: Path, overwrite: bool, replaces: Identity | None = None) -> None:
    """Move a finished file into place in one step. Without --overwrite a hard link, which fails when the target
    exists, rather than a rename, which would replace a file that appeared meanwhile; an output an earlier run made
    is checked again just before it is replaced."""
    if overwrite:
        os.replace(partial, target)
        return
    try:
        os.link(partial, target)
    except OSError:  # the target exists (an earlier run's output?), or no hard links here: check, then rename
        refuse_existing(target, overwrite, replaces)
        os.replace(partial, target)
    else:
        os.unlink(partial)


def discard(partial: Path) -> None:
    """Remove a temporary output, the ``@`` file Blender writes a .blend through and the ``.blend1`` backup it
    makes when the temporary .blend is saved twice (``--textures png``), where they are left."""
    for path in (partial, partial.with_name(partial.name + "@"), partial.with_name(partial.name + "1")):
        with suppress(OSError):
            path.unlink(missing_ok=True)


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = partial_path(path, uuid.uuid4().hex[:12])
    try:
        partial.write_text(text, encoding="utf-8")
        publish(partial, path, overwrite=True)
    finally:
        discard(partial)


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
