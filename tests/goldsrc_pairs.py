"""GoldSrc models next to the sources they were compiled from, and what the HL SDK's ``studiomdl`` makes of those
sources, so a decompile can be compared with the originals (tests only; no code taken from the compiler, only what
it does, as documented in ``io_ms3d_mdl/decompile/goldsrc``).

Pairs: ``man`` and ``chrome_sphere`` in the shared samples; the other models of the same two repositories when
their snapshots are on this machine (``fetch`` puts them in ``../.mirror``, or ``IO_MS3D_MDL_MIRROR``).

What the compiler does to the originals, modelled here before comparing:
- bones no vertex uses (nor any child of theirs) are dropped; the rest keep the order in which the QC's models
  first use them;
- vertex positions are cut to two decimals in their bone's space (so within 0.01·√3 in model space), normals within
  2° of one another merged;
- texture coordinates become texels: ``s = trunc(u·(width-1))`` less the smallest ``s`` of that texture, ``t`` the
  largest ``trunc(v·(height-1))`` less this one (``u``, ``v`` clamped to [-1, 2]); chrome textures get none;
- animation values are quantised (one step of the bone's scale), a looping sequence's last frame is set to its
  first (bar its ``L`` axes), and an animation's root bones are turned 90° about Z (undone by the decompile).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from conftest import ROOT
from qc_grammar import Statement, parse

from io_ms3d_mdl.decompile.goldsrc.activities import activity_number
from io_ms3d_mdl.decompile.goldsrc.qc import CONTROLS, implied_flags

MIRROR = Path(os.environ.get("IO_MS3D_MDL_MIRROR", ROOT.parent / ".mirror"))
SOURCES_REPO = "malortie+assimp-hl1-mdl-importer-tests-sources"
MODELS_REPO = "assimp+assimp"
MODELS_FOLDER = "test/models/MDL/MDL (HL1)"
CONTROL_BITS = {name.lower(): bit for bit, name in CONTROLS.items()}
RENDER_BITS = {"masked": 64, "additive": 32, "fullbright": 4, "chrome": 2, "flatshade": 1}


def mirror_tree(repo: str, paths: list[str], into: Path) -> Path:
    """The files under ``paths`` of a fetched repository snapshot, written into ``into``; skips without it."""
    git_dir = MIRROR / repo / "repo"
    if not git_dir.is_dir() or shutil.which("git") is None:
        pytest.skip(f"the snapshot of {repo.replace('+', '/')} is not at {git_dir} (fetch it to run this test)")
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "--format=tar", "HEAD", *paths], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


@dataclass
class QcSequence:
    name: str
    files: list[str]
    fps: float = 30.0
    loop: bool = False
    activity: int = 0
    weight: int = 0
    blend: tuple[int, float, float] | None = None
    motion: int = 0
    events: list[tuple[int, int, str]] = field(default_factory=list)
    nodes: tuple[int, int, int] = (0, 0, 0)  # entry, exit, flags


@dataclass
class GoldSrcQc:
    """A QC as the SDK's ``studiomdl`` understands it (the commands a GoldSrc model holds)."""

    bodies: list[tuple[str, list[str | None]]] = field(default_factory=list)
    families: list[list[str]] = field(default_factory=list)
    modes: dict[str, int] = field(default_factory=dict)  # texture (lower case) -> $texrendermode flags
    attachments: list[tuple] = field(default_factory=list)
    controllers: list[tuple] = field(default_factory=list)
    hboxes: list[tuple] = field(default_factory=list)
    eye: tuple[float, float, float] | None = None
    sequences: list[QcSequence] = field(default_factory=list)
    groups: list[str] = field(default_factory=list)  # $sequencegroup labels in order
    group_size: int | None = None
    external_textures: bool = False
    cdtextures: list[str] = field(default_factory=list)

    def texture_flags(self, name: str) -> int:
        """The flags the compiler gives texture ``name``: by its name, then by ``$texrendermode``."""
        return implied_flags(name) | self.modes.get(name.lower(), 0)


def read_qc(path: Path) -> GoldSrcQc:
    qc = GoldSrcQc()
    for statement in parse(path.read_bytes(), str(path)):
        values = statement.values()
        command = statement.command
        if command == "$body":
            qc.bodies.append((values[0], [values[1]]))
        elif command == "$bodygroup":
            options: list[str | None] = []
            tokens = [t for t in statement.args[1:] if t.quoted or t.text not in (b"{", b"}")]
            i = 0
            while i < len(tokens):
                word = tokens[i].value.lower()
                if word == "studio":
                    options.append(tokens[i + 1].value)
                    i += 2
                else:
                    if word == "blank":
                        options.append(None)
                    i += 1
            qc.bodies.append((values[0], options))
        elif command == "$texturegroup":
            rows, row, depth = [], [], 0
            for token in statement.args[1:]:
                if not token.quoted and token.text == b"{":
                    depth += 1
                elif not token.quoted and token.text == b"}":
                    depth -= 1
                    if depth == 1:
                        rows.append(row)
                        row = []
                elif depth == 2:
                    row.append(token.value)
            qc.families = rows
        elif command == "$texrendermode":
            qc.modes[values[0].lower()] = qc.modes.get(values[0].lower(), 0) | RENDER_BITS[values[1].lower()]
        elif command == "$attachment":
            qc.attachments.append((int(values[0]), values[1], *np.float32([float(v) for v in values[2:5]])))
        elif command == "$controller":
            index = 4 if values[0].lower() == "mouth" else int(values[0])
            start, end = np.float32(float(values[3])), np.float32(float(values[4]))
            qc.controllers.append((index, values[1], CONTROL_BITS[values[2].lower()], start, end))
        elif command == "$hbox":
            qc.hboxes.append((int(values[0]), values[1], *np.float32([float(v) for v in values[2:8]])))
        elif command == "$eyeposition":
            qc.eye = tuple(float(v) for v in values[:3])
        elif command == "$sequence":
            qc.sequences.append(_sequence(statement))
        elif command == "$sequencegroup":
            qc.groups.append(values[0])
        elif command == "$sequencegroupsize":
            qc.group_size = int(values[0])
        elif command == "$externaltextures":
            qc.external_textures = True
        elif command == "$cdtexture":
            qc.cdtextures += values
    return qc


def _sequence(statement: Statement) -> QcSequence:
    """The options of a ``$sequence`` as ``Cmd_Sequence`` reads them (a later ``blend`` replaces an earlier one)."""
    args = statement.args
    seq = QcSequence(args[0].value, [])
    i = 1
    while i < len(args):
        token = args[i]
        word = token.value.lower()
        bare = not token.quoted
        if bare and word in ("{", "}", "deform"):
            i += 1
        elif bare and word == "event":
            event, frame = int(args[i + 1].value), int(args[i + 2].value)
            option = ""
            if i + 3 < len(args) and args[i + 3].line == args[i + 2].line and args[i + 3].value != "}":
                option = args[i + 3].value
                i += 1
            seq.events.append((event, frame, option))
            i += 3
        elif word == "fps":
            seq.fps = float(args[i + 1].value)
            i += 2
        elif word.startswith("loop"):
            seq.loop = True
            i += 1
        elif word == "blend":
            seq.blend = (CONTROL_BITS[args[i + 1].value.lower()], float(args[i + 2].value), float(args[i + 3].value))
            i += 4
        elif word in ("node",):
            seq.nodes = (int(args[i + 1].value), int(args[i + 1].value), seq.nodes[2])
            i += 2
        elif word in ("transition", "rtransition"):
            flags = seq.nodes[2] | (1 if word == "rtransition" else 0)
            seq.nodes = (int(args[i + 1].value), int(args[i + 2].value), flags)
            i += 3
        elif word in ("frame",):
            i += 3
        elif word in ("origin",):
            i += 4
        elif word in ("rotate", "scale"):
            i += 2
        elif word == "pivot":
            i += 4
        elif word in CONTROL_BITS:
            seq.motion |= CONTROL_BITS[word]
            i += 1
        elif word == "animation":
            seq.files.append(args[i + 1].value)
            i += 2
        elif activity_number(word):
            seq.activity, seq.weight = activity_number(word), int(args[i + 1].value)
            i += 2
        else:
            seq.files.append(token.value)
            i += 1
    return seq


def smd_path(qc: Path, name: str) -> Path:
    """Where ``studiomdl`` reads a QC's SMD ``name`` (``$cd`` being the QC's folder)."""
    return qc.parent / (name.replace("\\", "/") + ".smd")


def texture_path(qc_path: Path, qc: GoldSrcQc, name: str) -> Path:
    """Where ``studiomdl`` finds texture ``name``: the first ``$cdtexture`` folder holding it."""
    for folder in qc.cdtextures or ["."]:
        candidate = qc_path.parent / folder.replace("\\", "/") / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(name)
