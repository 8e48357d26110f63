"""Load the add-on through its real entry point, the repository's ``__init__.py``, as Blender loads an extension,
so the scripts that run Blender exercise exactly what users install."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_addon() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "io_ms3d_mdl_addon", ROOT / "__init__.py", submodule_search_locations=[str(ROOT)]
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
