"""The Source decompiler (MDL 44–49, 52, 53; Bloodlines' 2531 through ``bloodlines``). ``model`` reads what the
import reads and writes: the QC (``qc``, with ``details`` for the header and sequence facts the import does not
keep, ``rules`` for flex rules), a reference SMD per body-part option and level of detail and a physics SMD
(``geometry``), an SMD per animation (``animations``) and a VTA per flexed model (``flexes``)."""

from __future__ import annotations

import struct

from ..registry import DecompileJob, Decompiler

VERSIONS = (*range(44, 54), 2531)  # 2531: Vampire: The Masquerade – Bloodlines (an early Source build)


def accepts(head: bytes) -> bool:
    return len(head) >= 8 and head[:4] == b"IDST" and struct.unpack_from("<i", head, 4)[0] in VERSIONS


def run(job: DecompileJob) -> None:
    from .model import decompile_source

    decompile_source(job)


DECOMPILER = Decompiler("source", accepts, run)
