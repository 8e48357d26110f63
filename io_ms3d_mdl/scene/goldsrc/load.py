"""Loading a GoldSrc model, and one more of its animations on demand, inside the import's confinement and budget
(the caller's ``scene.load`` sets them). The parsed model and its group files are kept for a few models, so a
click in the animation list re-reads nothing that has not changed."""

from __future__ import annotations

import os

from ...access import read_file
from ...formats.goldsrc.model import GsFile
from ...formats.goldsrc.reader import QUAKE, attach_companions, is_goldsrc, read_goldsrc_bytes
from ..finite import replace_non_finite
from ..source.convert import SourceOptions
from ..types import SceneData
from .animation import add_goldsrc_animations
from .convert import goldsrc_skeleton, goldsrc_to_scene

_MODELS: dict[tuple, GsFile] = {}


def is_goldsrc_file(data: bytes) -> bool:
    """A GoldSrc model or companion, or a Quake model (refused by the GoldSrc reader, by name)."""
    return is_goldsrc(data) or data[:4] in QUAKE


def load_goldsrc(path: str, data: bytes, options: SourceOptions) -> SceneData:
    gs = read_goldsrc_bytes(data, os.fspath(path))
    attach_companions(gs, os.fspath(path))
    key = _key(path, options)
    if key is not None:
        _MODELS[key] = gs
        while len(_MODELS) > 4:
            _MODELS.pop(next(iter(_MODELS)))
    return goldsrc_to_scene(gs, options)


def goldsrc_animation(path: str, name: str, options: SourceOptions, fps: float) -> SceneData | None:
    """Animation ``name`` of the GoldSrc model at ``path`` as the one action of a scene (None: not a GoldSrc model)."""
    gs = _MODELS.get(_key(path, options))
    if gs is None:
        data = read_file(path)  # regular files only, within the budget
        if not is_goldsrc(data):
            return None
        gs = read_goldsrc_bytes(data, os.fspath(path))
        attach_companions(gs, os.fspath(path))
    scene = SceneData(name)
    scene.skeleton, axes = goldsrc_skeleton(gs, options, "")
    add_goldsrc_animations(gs, axes, options.scale, scene, only=name, fps=fps)
    replace_non_finite(scene)
    return scene


def _key(path: str, options: SourceOptions) -> tuple | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (os.path.abspath(path), stat.st_mtime_ns, stat.st_size, options.search_roots, options.work_limit)
