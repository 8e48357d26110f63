"""The decompilers there are, one per engine, each recognising its files by their first bytes.

Stable API for a plug-in (``decompile/<engine>/__init__.py`` defines ``DECOMPILER``; ``decompile/__init__.py``
loads every sub-package of ``decompile`` that defines one, so adding an engine edits no shared file):

``Decompiler(name, accepts, run)``
    ``accepts(head: bytes) -> bool``: the file's first 64 bytes are this engine's model.
    ``run(job: DecompileJob) -> None``: writes the sources through ``job.output`` (``output.Output``), adds
    warnings to ``job.result.warnings``, may set ``job.result.qc``/``version``; raises ``errors.FormatError``
    for a model it cannot decompile. It runs inside the model's confinement and budget (``access.confined``), so
    it reads companions with ``access.read_file`` and the readers as the import does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ..errors import Warnings
from .output import Output


@dataclass(frozen=True)
class DecompileOptions:
    search_roots: tuple[str, ...] = ()  # extra game or mod folders (as the import's SourceOptions)
    mounts: tuple[str, ...] = ()  # mounted games and archives
    work_limit: float = 1.0  # scales every work budget (budget.py)
    overwrite: bool = False  # replace files already in the output folder
    animations: bool = True  # one SMD per animation
    include_animations: bool = True  # also the animations of the $includemodel models, under this skeleton
    lods: bool = True  # reference SMDs of the lower levels of detail ($lod)
    physics: bool = True  # the collision model (.phy)
    flexes: bool = True  # VTA and the flex rules
    definebone: bool = False  # a $definebone line per bone (the whole skeleton, as compiled)
    textures: bool = True  # GoldSrc: the textures as BMP


@dataclass
class DecompileResult:
    """What one model's decompile did: a report row."""

    source: str  # the model's path as given
    out_dir: str
    engine: str = ""  # the decompiler's name ("source", "goldsrc")
    version: int | None = None
    qc: str | None = None  # the QC's path relative to out_dir
    files: list[str] = field(default_factory=list)  # every file written, relative to out_dir, in order
    warnings: Warnings = field(default_factory=Warnings)
    seconds: float = 0.0

    def as_row(self) -> dict:
        return {
            "source": self.source,
            "out_dir": self.out_dir,
            "engine": self.engine,
            "version": self.version,
            "qc": self.qc,
            "files": list(self.files),
            "warnings": list(self.warnings),
            "seconds": round(self.seconds, 4),
        }


@dataclass
class DecompileJob:
    path: str
    data: bytes  # the model file's bytes, already read through the access layer
    output: Output
    options: DecompileOptions
    result: DecompileResult


@dataclass(frozen=True)
class Decompiler:
    name: str
    accepts: Callable[[bytes], bool]
    run: Callable[[DecompileJob], None]
