"""``convert`` and ``batch`` run Blender; ``info`` must not need it. This module is where the command line meets
``bpy``: it is imported only when asked for, with one line saying how to get it when it is missing."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Callable
from types import ModuleType

BPY_VERSION = "5.2.3"  # the newest pinned LTS wheel (requirements/blender-5.2.txt)
BPY_PYTHON = "3.13"  # the Python it is built for


class BlenderMissing(RuntimeError):
    def __init__(self, command: str) -> None:
        super().__init__(
            f"io-ms3d-mdl {command} needs Blender as a Python module: pip install bpy=={BPY_VERSION} "
            f"(Python {BPY_PYTHON}), "
            f"or from a checkout run it inside Blender: blender --background --python scripts/batch_import.py -- ARGS"
        )


def inside_blender() -> bool:
    """Running in Blender itself (``blender --background --python``) rather than with the bpy module."""
    bpy = sys.modules.get("bpy")
    return bool(bpy is not None and bpy.app.binary_path)


def bpy_available() -> bool:
    """Whether ``bpy`` can be imported, without importing it (workers import it; their parent need not)."""
    if "bpy" in sys.modules:
        return True
    try:
        return importlib.util.find_spec("bpy") is not None
    except (ImportError, ValueError):  # an import hook that refuses it, or a broken entry on the path
        return False


def require_bpy(command: str) -> ModuleType:
    if not bpy_available():
        raise BlenderMissing(command)
    try:
        return _import_bpy()
    except (ImportError, OSError) as exc:  # a wheel for another Python, or a library it needs is missing
        raise BlenderMissing(command) from exc


def _import_bpy() -> ModuleType:
    """``import bpy`` with Blender's start-up log sent to stderr: stdout carries only our tables and JSON. (From
    5.1 on, Blender logs ``color_management | Using OCIO=…`` to stdout when the ``OCIO`` variable is set, as it is
    in every process a bpy process starts.)"""
    if "bpy" in sys.modules:
        return sys.modules["bpy"]
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all
        return importlib.import_module("bpy")
    try:
        os.dup2(2, 1)
        return importlib.import_module("bpy")
    finally:
        os.dup2(saved, 1)
        os.close(saved)


def run_and_leave(command: Callable[[], int]) -> None:
    """Run a command and exit with its status: 130 when interrupted (Ctrl-C), quietly when the reader of our output
    went away (``| head``), as other command-line tools do."""
    try:
        code = command()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 1
    except KeyboardInterrupt:
        code = 130
    leave(code)


def leave(code: int) -> None:
    """Exit. The bpy module can crash while tearing itself down after some exporters ran (glTF on 4.2), and 4.5's
    exit handlers can wait forever on its own file-closing thread; once everything is written and flushed, leave
    without that teardown."""
    sys.stdout.flush()
    sys.stderr.flush()
    if "bpy" in sys.modules and not inside_blender():
        os._exit(code)
    sys.exit(code)
