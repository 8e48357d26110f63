"""Read and convert one model inside its confinement and work budget. No ``bpy``.

Every front end (the operators, batch conversion, benchmarks) loads through here, so none of them can forget
which files an import may open (``access.py``) or how much work it may do (``budget.py``).
"""

from __future__ import annotations

from ..access import Confinement, confined
from ..budget import Budget
from ..errors import Warnings
from ..formats.ms3d import read_ms3d
from ..formats.source import find_sidecars, read_mdl, read_vtx, read_vvd
from ..formats.source.includes import load_ani, load_includes
from .from_ms3d import Ms3dOptions, ms3d_to_scene
from .from_source import SourceOptions, source_to_scene
from .types import SceneData


def load_ms3d(path: str, options: Ms3dOptions | None = None) -> SceneData:
    options = options or Ms3dOptions()
    confinement = Confinement.for_model(path, options.search_roots, options.allow_absolute_paths)
    with confined(confinement, Budget(options.work_limit)):
        return ms3d_to_scene(read_ms3d(path), options)


def load_source(path: str, options: SourceOptions | None = None) -> SceneData:
    """Read a model and whichever companions exist next to it (case-insensitively), then assemble it."""
    options = options or SourceOptions()
    with confined(Confinement.for_model(path, options.search_roots), Budget(options.work_limit)):
        mdl = read_mdl(path)
        sidecars = find_sidecars(path)
        vvd = read_vvd(sidecars.vvd) if sidecars.vvd else None
        vtx = read_vtx(sidecars.vtx) if sidecars.vtx else None
        ani = load_ani(path, mdl)
        warnings = Warnings()
        includes = load_includes(path, mdl, warnings) if options.import_animations else []
        scene = source_to_scene(mdl, vvd, vtx, options, ani, includes)
        scene.warnings.extend(warnings)
        return scene


LOADERS = {".ms3d": load_ms3d, ".mdl": load_source}
