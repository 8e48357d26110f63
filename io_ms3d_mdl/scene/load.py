"""Read and convert one model inside its confinement and work budget. No ``bpy``.

Every front end (the operators, batch conversion, benchmarks) loads through here, so none of them can forget
which files an import may open (``access.py``) or how much work it may do (``budget.py``).
"""

from __future__ import annotations

import os

from ..access import Confinement, confined, read_file
from ..budget import Budget
from ..errors import FormatError, Warnings
from ..filesystem.mounts import split
from ..formats.ms3d import read_ms3d
from ..formats.source import find_sidecars, read_mdl, read_mesh_companions, read_physics_companion
from ..formats.source.includes import load_ani, load_includes
from ..formats.source.mdl import read_mdl_bytes
from ..formats.source.phy import PhyFile
from .datablocks import check_datablocks
from .finite import replace_non_finite
from .goldsrc.load import goldsrc_animation, is_goldsrc_file, load_goldsrc
from .ms3d.convert import Ms3dOptions, ms3d_to_scene
from .names import fit_property_names
from .source.animation import add_source_animations
from .source.convert import SourceOptions, source_skeleton, source_to_scene
from .types import SceneData


def load_ms3d(path: str, options: Ms3dOptions | None = None) -> SceneData:
    options = options or Ms3dOptions()
    confinement = Confinement.for_model(path, options.search_roots, options.allow_absolute_paths, options.mounts)
    with confined(confinement, Budget(options.work_limit)):
        scene = ms3d_to_scene(read_ms3d(path), options)
        scene.warnings.extend(confinement.notes)
        fit_property_names(scene)
        check_datablocks(scene, path)
        return scene


def load_source(path: str, options: SourceOptions | None = None) -> SceneData:
    """Read a model and whichever companions exist next to it (case-insensitively), then assemble it."""
    options = options or SourceOptions()
    confinement = Confinement.for_model(path, options.search_roots, mounted=options.mounts)
    with confined(confinement, Budget(options.work_limit)):
        data = read_file(path)
        if is_goldsrc_file(data):  # Half-Life 1's .mdl (or a companion of one): the same operator, another engine
            scene = load_goldsrc(path, data, options)
            scene.warnings.extend(confinement.notes)
            fit_property_names(scene)
            check_datablocks(scene, path)  # (GoldSrc skipped this: 7,000 one-pixel textures took 165 s)
            return scene
        mdl = read_mdl_bytes(data, os.fspath(path))
        sidecars = find_sidecars(path)
        lod = options.lod if options.lod >= 0 else None  # only the level of detail that is built
        vvd, vtx, notes = read_mesh_companions(mdl, sidecars, lod)  # v53: from inside the .mdl
        warnings = Warnings()
        for note in (*confinement.notes, *notes):
            warnings.add(note)
        ani, includes = _animation_sources(path, mdl, options, warnings)
        phy = _physics(mdl, sidecars, options, warnings)
        scene = source_to_scene(mdl, vvd, vtx, options, ani, includes, phy)
        scene.warnings.extend(warnings)
        fit_property_names(scene)
        check_datablocks(scene, path)
        return scene


def _physics(mdl, sidecars, options: SourceOptions, warnings: Warnings) -> PhyFile | None:
    """The collision model: the ``.phy`` beside the model, or the one a v53 model embeds. A missing or broken one
    costs only the physics objects, with a warning, never the model."""
    if not options.import_physics:
        return None
    try:
        return read_physics_companion(mdl, sidecars)
    except FormatError as exc:
        warnings.add(f"the collision model was not imported: {exc.message}")
        return None
    except Exception as exc:
        warnings.add(f"the collision model was not imported: {type(exc).__name__}: {exc}")
        return None


def _animation_sources(path: str, mdl, options: SourceOptions, warnings: Warnings) -> tuple:
    """The ``.ani`` block file and the included models, kept for a few models so that building one more animation
    on demand (a click in the animation list) re-reads nothing that has not changed."""
    if not options.import_animations:
        return load_ani(path, mdl), []
    key = _source_key(path, options)
    if key is not None and key in _SOURCES:
        _, ani, includes, cached_warnings = _SOURCES[key]
        warnings.extend(cached_warnings)
        return ani, includes
    found = Warnings()
    ani, includes = load_ani(path, mdl), load_includes(path, mdl, found)
    warnings.extend(found)
    if key is not None:
        _SOURCES[key] = (mdl, ani, includes, list(found))
        while len(_SOURCES) > 4:
            _SOURCES.pop(next(iter(_SOURCES)))
    return ani, includes


_SOURCES: dict[tuple, tuple] = {}


def _source_key(path: str, options: SourceOptions) -> tuple | None:
    """The same file (path, time, size) read under the same roots and budget."""
    where = split(path)  # a model inside an archive changes with the archive
    try:
        stat = os.stat(where[0] if where else path)
    except OSError:
        return None
    key = (os.path.abspath(path), stat.st_mtime_ns, stat.st_size, options.search_roots, options.mounts)
    return (*key, options.work_limit)


def load_source_animation(path: str, name: str, options: SourceOptions, fps: float) -> SceneData:
    """One more animation of an imported model, by name, as the one action of a scene at the rate ``fps``, with
    the skeleton its channels index: what a click in the animation list builds. Reads through the same
    confinement and budgets as the import."""
    with confined(
        Confinement.for_model(path, options.search_roots, mounted=options.mounts), Budget(options.work_limit)
    ):
        gold = goldsrc_animation(path, name, options, fps)
        if gold is not None:
            return gold
        cached = _SOURCES.get(_source_key(path, options))
        mdl = cached[0] if cached else read_mdl(path)
        warnings = Warnings()
        ani, includes = _animation_sources(path, mdl, options, warnings)
        scene = SceneData(name, warnings=warnings)
        scene.skeleton, axes = source_skeleton(mdl, options)
        add_source_animations(mdl, ani, axes, options.scale, scene, includes, only=name, fps=fps)
        replace_non_finite(scene)
        fit_property_names(scene)
        return scene


LOADERS = {".ms3d": load_ms3d, ".mdl": load_source}
