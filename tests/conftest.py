"""Shared fixtures. Reader and scene tests run anywhere; Blender tests need the ``bpy`` wheel and skip without it."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
for path in (ROOT, TESTS):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))

SHARED = Path(os.environ.get("IO_MS3D_MDL_SHARED", ROOT.parent / "shared"))
SAMPLES = SHARED / "samples"
EXAMPLE = ROOT / "examples" / "house.ms3d"
# Snapshots of public repositories fetched onto this machine (wider real-file tests than the shared corpus holds).
MIRROR = Path(os.environ.get("IO_MS3D_MDL_MIRROR", ROOT.parent / ".mirror"))

try:
    import bpy
except ImportError:
    bpy = None


def script_module(name: str) -> ModuleType:
    """``scripts/<name>.py`` as a module: the set-up and bench scripts are files to run, not a package to import,
    yet their tests call their functions."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def samples_dir() -> Path:
    """The shared sample corpus; tests skip without it on a developer machine, CI insists on it."""
    if not SAMPLES.is_dir():
        if os.environ.get("IO_MS3D_MDL_REQUIRE_SAMPLES"):
            pytest.fail(f"the shared samples are required but {SAMPLES} is missing")
        pytest.skip(f"shared sample corpus not found at {SAMPLES} (set IO_MS3D_MDL_SHARED)")
    return SAMPLES


def mirror_tree(repo: str, paths: list[str], into: Path) -> Path:
    """The files under ``paths`` of a fetched repository snapshot (``owner+name``), written into ``into``; skips
    saying where the snapshot was looked for when this machine has none (they are not part of the shared corpus)."""
    git_dir = MIRROR / repo / "repo"
    if not git_dir.is_dir() or shutil.which("git") is None:
        pytest.skip(f"the snapshot of {repo.replace('+', '/')} is not at {git_dir} (fetch it to run this test)")
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", *paths], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def ms3d_sample(relative: str) -> Path:
    return sample_path("ms3d", relative)


def sample_path(kind: str, relative: str) -> Path:
    """A shared sample by its path under ``samples/<kind>/``, or under ``samples/coverage/<kind>/``: the corpus keeps
    files of newly supported features apart, and the every-sample suites take them in as support lands."""
    main = samples_dir() / kind / relative
    return main if main.exists() else samples_dir() / "coverage" / kind / relative


def sample_files(kind: str, pattern: str) -> list[Path]:
    """Every shared sample of ``kind`` ("ms3d" or "source") matching ``pattern``, the coverage files included."""
    root = samples_dir()
    return sorted([*(root / kind).rglob(pattern), *(root / "coverage" / kind).rglob(pattern)])


def sample_names(kind: str, pattern: str) -> set[str]:
    """:func:`sample_files` as paths relative to their ``<kind>`` folder (what :func:`sample_path` takes)."""
    root = samples_dir()
    bases = (root / kind, root / "coverage" / kind)
    return {
        p.relative_to(next(b for b in bases if p.is_relative_to(b))).as_posix() for p in sample_files(kind, pattern)
    }


def sample_names_to_parametrize(kind: str, pattern: str) -> list[str]:
    """:func:`sample_names` sorted, for ``parametrize`` when the module is collected: none where the corpus is
    missing (a skip at collection would skip the whole module, its other tests too)."""
    try:
        return sorted(sample_names(kind, pattern))
    except pytest.skip.Exception:
        return []


@pytest.fixture(scope="session")
def addon():
    """Register the add-on once per session (classes survive factory resets, blender.md §5.1)."""
    if bpy is None:
        pytest.skip("Blender (the bpy wheel) is not installed; run ./scripts/test.sh")
    from io_ms3d_mdl import blender as addon_blender

    addon_blender.register()
    yield addon_blender
    addon_blender.unregister()


@pytest.fixture
def blender(addon):
    """A clean empty Blender file for each test."""
    bpy.ops.wm.read_factory_settings(use_empty=True)
    return bpy


def datablock_counts() -> dict[str, int]:
    """How many datablocks of every kind the file holds (to prove a failed import changed nothing)."""
    from io_ms3d_mdl.blender.rollback import id_collection_names

    return {name: len(getattr(bpy.data, name)) for name in id_collection_names()}


def forget_mounted_archives() -> None:
    """Unmount every archive and empty the file cache: both are process-wide, so one test's archives would otherwise
    answer the next test's lookups."""
    from io_ms3d_mdl import access
    from io_ms3d_mdl.filesystem import mounts

    mounts.forget_archives()
    access.clear_cache()


@pytest.fixture
def no_archives_mounted() -> Iterator[None]:
    """A test that starts with no archive mounted and leaves none behind (``pytest.mark.usefixtures`` it)."""
    forget_mounted_archives()
    yield
    forget_mounted_archives()


def assert_skinned_at_rest(obj) -> None:
    """A skinned mesh object with its armature at rest: the evaluated vertices are the stored ones (the bind pose
    the vertices were skinned in)."""
    import numpy as np

    evaluated = obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).data
    a = np.empty(len(evaluated.vertices) * 3)
    b = np.empty(len(obj.data.vertices) * 3)
    evaluated.vertices.foreach_get("co", a)
    obj.data.vertices.foreach_get("co", b)
    np.testing.assert_allclose(a, b, atol=1e-5)


# --- leaving -------------------------------------------------------------------------------------------------------

_SESSION: list[pytest.Session] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _SESSION.append(session)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """Leave without the bpy module's teardown once pytest has written everything (reports, junit XML, temporary
    folders removed): bpy 4.5's exit handlers can wait forever on a condition its own file-closing thread is still
    waiting on (``GlobalState::~GlobalState`` against ``delayed_close_thread_run``, seen with gdb), which held a CI
    run past its limit after every test had passed. The command-line tools leave the same way
    (``cli.needs_blender.leave``)."""
    if "bpy" in sys.modules and _SESSION:
        from io_ms3d_mdl.cli.needs_blender import leave

        leave(int(_SESSION[-1].exitstatus))
