"""What a conversion run does with every file; the same in the parent and in its worker processes (as JSON)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .import_flags import ImportChoices


@dataclass(frozen=True)
class Settings:
    fmt: str  # "blend" or "glb": the format of each task's own output
    overwrite: bool
    token: str  # names this run's temporary files, so the parent can find what a killed worker left
    single: Path | None = None  # everything into this one file (.blend or .glb) instead
    choices: ImportChoices = field(default_factory=ImportChoices)
    verbose: bool = False  # Blender's own messages go to stderr instead of nowhere
    outputs_log: Path | None = None  # where each output is logged before it is moved into place (output_log.py)
    output_root: Path | None = None  # the output folder: no step below it is followed through a link (no_links.py)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.fmt,
            "overwrite": self.overwrite,
            "token": self.token,
            "single": str(self.single) if self.single else None,
            "choices": self.choices.to_json(),
            "verbose": self.verbose,
            "outputs_log": str(self.outputs_log) if self.outputs_log else None,
            "output_root": str(self.output_root) if self.output_root else None,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Settings:
        single = Path(data["single"]) if data["single"] else None
        choices = ImportChoices.from_json(data["choices"])
        log = Path(data["outputs_log"]) if data["outputs_log"] else None
        root = Path(data["output_root"]) if data.get("output_root") else None
        return cls(data["format"], data["overwrite"], data["token"], single, choices, data["verbose"], log, root)

    def fingerprint(self) -> dict[str, Any]:
        """What decides an output's content, for --resume: the same inputs with other options are not up to date."""
        return json.loads(json.dumps({"format": self.fmt, "import": self.choices.to_json()}))  # as a report has it
