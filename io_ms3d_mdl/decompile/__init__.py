"""Decompiling: a compiled model back to the sources a modder edits and ``studiomdl`` compiles (QC, SMD, VTA; BMP
for GoldSrc). Blender-free: this floor sits above ``scene`` and ``formats`` (whose readers it reuses) and below
``blender``.

``decompile(path, out_dir, options=None) -> DecompileResult``
    Reads ``path`` (a model on disk or inside a mounted archive) within the same confinement and budget as an
    import, picks the engine's decompiler by the file's first bytes (``registry``), and writes every file fresh into
    ``out_dir`` (``output``). Raises ``errors.FormatError`` for a model it cannot decompile (one clean message); the
    result lists the files written and the warnings. Options: ``registry.DecompileOptions``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
import types
from functools import cache

from ..access import Confinement, confined, read_file
from ..budget import Budget
from ..errors import FormatError
from .output import Output, check_output_root
from .registry import DecompileJob, DecompileOptions, Decompiler, DecompileResult

__all__ = ["DecompileOptions", "DecompileResult", "Decompiler", "decompile", "decompilers"]


@cache
def decompilers() -> tuple[Decompiler, ...]:
    """Every ``decompile/<engine>`` sub-package's ``DECOMPILER``, by package name."""
    found = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.ispkg:
            module = importlib.import_module(f"{__name__}.{info.name}")
            decompiler = getattr(module, "DECOMPILER", None)
            if isinstance(decompiler, Decompiler):
                found.append(decompiler)
    return tuple(found)


def decompile(path: str, out_dir: str, options: DecompileOptions | None = None) -> DecompileResult:
    options = options or DecompileOptions()
    started = time.perf_counter()
    path = str(path)
    result = DecompileResult(source=path, out_dir=str(out_dir))
    confinement = Confinement.for_model(path, options.search_roots, mounted=options.mounts)
    with confined(confinement, Budget(options.work_limit)):
        data = read_file(path)
        head = data[:64]
        for decompiler in decompilers():
            if decompiler.accepts(head):
                break
        else:
            raise FormatError(path, 0, "not a model this decompiler knows (expected a Source or GoldSrc .mdl)")
        result.engine = decompiler.name
        check_output_root(out_dir, confinement.roots)
        output = Output(out_dir, options.overwrite, lambda: confinement.bytes_read[0], staged=True)
        try:
            decompiler.run(DecompileJob(path, data, output, options, result))
            output.publish()  # all files or none: a refusal half-way leaves nothing behind
        finally:
            output.close()
            result.files = list(output.files)
    result.seconds = time.perf_counter() - started
    return result


class _CallableModule(types.ModuleType):
    """``io_ms3d_mdl.decompile(path, out, options)`` for scripts: this package is also the function."""

    def __call__(self, path: str, out_dir: str, options: DecompileOptions | None = None) -> DecompileResult:
        return decompile(path, out_dir, options)


sys.modules[__name__].__class__ = _CallableModule
