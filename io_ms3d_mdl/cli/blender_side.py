"""The Blender side of a conversion, in a worker process or in the only one.

Each file goes through the add-on's own import path, as the operators do: ``scene.load`` (file confinement and work
budgets), then ``blender.importer`` (building, and rollback when a file fails), with the options the flags chose.
Then the file is written to its own output, or stays in the open file for one combined output.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from pathlib import Path
from typing import Any

from .files import NotAModel, Task
from .needs_blender import require_bpy
from .no_links import Folder, output_folder
from .output_log import Identity, identity_of, log_output
from .reports import describe, new_record, one_line
from .safe_write import discard_in, partial_path, publish_in, refuse_existing_in
from .settings import Settings

ImportFile = Callable[[Path, Path | None], Any]  # (model, folder for PNG textures or None) -> ImportResult
Emit = Callable[[dict[str, Any]], None]


@contextmanager
def blender_messages(verbose: bool) -> Iterator[None]:
    """Blender prints its own lines (``Info: Saved …``, the glTF exporter's progress) straight to file descriptor 1.
    They go to stderr with --verbose and nowhere otherwise, so stdout carries only what this tool prints."""
    sys.stdout.flush()
    saved = os.dup(1)
    target = os.dup(2) if verbose else os.open(os.devnull, os.O_WRONLY)
    os.dup2(target, 1)
    os.close(target)
    try:
        yield
    finally:
        sys.stdout.flush()
        flush_c_stdio()  # what Blender printed may still sit in the C library's buffer
        os.dup2(saved, 1)
        os.close(saved)


def flush_c_stdio() -> None:
    with suppress(OSError, AttributeError, TypeError):
        ctypes.CDLL(None).fflush(None)


def empty_file(bpy: Any) -> None:
    """A new empty file that keeps the preferences: ``read_factory_settings`` would also reset them, disabling an
    installed copy of this extension (whose unregister then removes properties the import needs)."""
    bpy.ops.wm.read_homefile(use_empty=True)


@contextmanager
def addon_registered() -> Iterator[None]:
    """The builders keep data in the add-on's registered properties (the animation list on a model's collection),
    so its classes are registered while files import, and unregistered after: the bpy module hangs or crashes at
    exit with classes still registered. Left alone when something (a test session) registered them already."""
    from .. import blender as addon
    from ..blender.operators import IMPORT_SCENE_OT_ms3d

    bpy = sys.modules["bpy"]

    # Registered already: by a test session, or by the installed extension when run inside Blender (registering
    # this copy over it would replace its classes, and unregistering it would break the extension).
    if IMPORT_SCENE_OT_ms3d.is_registered or hasattr(bpy.types, IMPORT_SCENE_OT_ms3d.__name__):
        yield
        return
    addon.register()
    try:
        yield
    finally:
        addon.unregister()


def importer(settings: Settings, command: str = "batch") -> ImportFile:
    """Import one model into the open file with the chosen options; the add-on's ImportResult comes back."""
    bpy = require_bpy(command)
    from ..blender.importer import import_files
    from ..blender.material import texture_output
    from ..scene.load import load_ms3d, load_source

    choices = settings.choices
    loaders = {
        ".ms3d": lambda p: load_ms3d(p, choices.ms3d),
        ".mdl": lambda p: load_source(p, choices.source),
    }

    def import_file(path: Path, textures: Path | None) -> Any:
        loader = loaders.get(path.suffix.lower())
        if loader is None:
            raise NotAModel(f"{path.name}: not a .ms3d or .mdl file")
        if not (path.is_file() or inside_archive(str(path))):
            raise NotAModel(f"{path.name}: no such file")
        with texture_output(str(textures) if textures else None):
            (result,) = import_files(bpy.context, [str(path)], loader)
        return result

    return import_file


def inside_archive(path: str) -> bool:
    """A path through an archive file: the import itself says what is wrong with it (a malformed archive, no such
    entry), in the archive's words."""
    from ..filesystem import mounts

    return mounts.split(path) is not None


def texture_folder(settings: Settings, target: Path | None, folder: Folder | None = None) -> Path | None:
    """Where --textures png writes decoded textures: ``textures/`` beside the .blend they belong to, made (and
    checked not to be a link) in the output's folder, and named through it (``no_links.py``)."""
    output = target or settings.single
    if settings.choices.textures != "png" or output is None or output.suffix.lower() != ".blend":
        return None
    if folder is None:
        return output.parent / "textures"
    folder.folder("textures").close()
    return Path(folder.entry("textures"))


def anchor(folder: Folder, output: Path, token: str) -> None:
    """Save the still empty file under the output's temporary name, so the textures an import writes are linked
    relative to the folder the .blend ends up in (the operator, likewise, writes PNGs only for a saved file)."""
    bpy = sys.modules["bpy"]
    bpy.ops.wm.save_as_mainfile(filepath=folder.entry(partial_path(output, token).name))


def save(
    target: Path,
    overwrite: bool,
    token: str,
    animations: str,
    log: Path | None = None,
    replaces: Identity | None = None,
    folder: Folder | None = None,
    root: Path | None = None,
) -> Identity | None:
    """Write the open file (.blend, or .glb by the target's extension) under a temporary name, then move it into
    place; logged first when the run keeps a log of its outputs, so even an unreported output is known as ours.
    Everything happens in the target's folder reached without a link (``folder``, or from ``root``). Returns the
    output's identity (what the report records)."""
    if folder is None:
        with output_folder(target.parent, root) as opened:
            return save(target, overwrite, token, animations, log, replaces, opened, root)
    bpy = sys.modules["bpy"]
    partial = partial_path(target, token).name
    try:
        if target.suffix.lower() == ".glb":
            bpy.ops.export_scene.gltf(
                filepath=folder.entry(partial), export_format="GLB", export_animations=animations != "none"
            )
        else:
            bpy.ops.wm.save_as_mainfile(filepath=folder.entry(partial), compress=True)
        made = log_output(log, target, partial, folder, root) if log is not None else identity_of(folder.lstat(partial))
        publish_in(folder, partial, target.name, overwrite, replaces)
        return made
    finally:
        discard_in(folder, partial)


def convert_one(
    import_file: ImportFile, task: Task, settings: Settings, single_folder: Folder | None = None
) -> dict[str, Any]:
    """One file, whatever it raises: the error goes into its record and the batch goes on. ``single_folder``: the
    folder of the one combined output, when textures go beside it."""
    start = time.perf_counter()
    record = new_record(task.source)
    try:
        with blender_messages(settings.verbose):
            if task.target is None:
                _convert(import_file, task, settings, record, None, single_folder)
            else:
                with output_folder(task.target.parent, settings.output_root) as folder:
                    try:
                        _convert(import_file, task, settings, record, folder)
                    finally:
                        discard_in(folder, partial_path(task.target, settings.token).name)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # SystemExit too: no file may end the batch
        record.update(status="failed", error=one_line(describe(exc)))
    record["seconds"] = round(time.perf_counter() - start, 3)
    return record


def _convert(
    import_file: ImportFile,
    task: Task,
    settings: Settings,
    record: dict,
    folder: Folder | None,
    single_folder: Folder | None = None,
) -> None:
    bpy = sys.modules["bpy"]
    textures = texture_folder(settings, task.target, folder or single_folder)
    if task.target is not None and folder is not None:
        refuse_existing_in(folder, task.target.name, settings.overwrite, task.replaces, task.target)  # before the work
        empty_file(bpy)
        if textures is not None:
            anchor(folder, task.target, settings.token)
    result = import_file(task.source, textures)
    record["warnings"] = [str(w) for w in result.warnings]
    record.update(
        objects=len(result.objects),
        vertices=result.vertices,
        triangles=result.triangles,
        materials=result.materials,
        bones=result.bones,
        actions=result.actions,
    )
    if result.degenerate_triangles:
        record["degenerate_triangles"] = result.degenerate_triangles
    if not result.ok:
        record.update(status="failed", error=one_line(str(result.error)))
    elif task.target is not None and folder is not None:
        made = save(
            task.target,
            settings.overwrite,
            settings.token,
            settings.choices.animations,
            settings.outputs_log,
            task.replaces,
            folder,
            settings.output_root,
        )
        record.update(output=str(task.target), output_identity=made)


class StopBetweenFiles:
    """Ctrl-C while Blender runs one of its own handlers is caught and printed by Blender, and the run would go on.
    So the first Ctrl-C is noted and honoured once the file now running is done; a second one stops at once."""

    def __init__(self) -> None:
        self.requested = False
        self.previous: Any = None

    def __enter__(self) -> StopBetweenFiles:
        with suppress(ValueError):  # not the main thread: leave Ctrl-C as it is
            self.previous = signal.signal(signal.SIGINT, self.note)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.previous is not None:
            signal.signal(signal.SIGINT, self.previous)

    def note(self, signum: int, frame: object) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        print("\nstopping after the file now running (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)

    def check(self) -> None:
        if self.requested:
            raise KeyboardInterrupt


def convert_here(
    tasks: list[Task],
    settings: Settings,
    started: Callable[[Task], None],
    finished: Emit,
    command: str = "batch",
) -> str | None:
    """Convert in this process. With one combined output, write it at the end; returns why that failed, if it did."""
    import_file = importer(settings, command)
    bpy = sys.modules["bpy"]
    with addon_registered(), StopBetweenFiles() as stop, ExitStack() as stack:
        single_folder = None
        with blender_messages(settings.verbose):
            empty_file(bpy)
            if settings.single is not None and texture_folder(settings, None) is not None:
                single_folder = stack.enter_context(output_folder(settings.single.parent))
                anchor(single_folder, settings.single, settings.token)
        for task in tasks:
            stop.check()
            started(task)
            finished(convert_one(import_file, task, settings, single_folder))
        stop.check()
        if settings.single is None:
            return None
        try:
            with blender_messages(settings.verbose):
                save(
                    settings.single,
                    settings.overwrite,
                    settings.token,
                    settings.choices.animations,
                    folder=single_folder,
                )
        except Exception as exc:
            return one_line(describe(exc))
        return None
