"""The Source decompiler (MDL 44–49, 52, 53): see ``qc`` for the QC and ``references``/``animations``/
``collision``/``flexes`` for the files it names."""

from __future__ import annotations

import struct

from ..registry import DecompileJob, Decompiler

VERSIONS = range(44, 54)


def accepts(head: bytes) -> bool:
    return len(head) >= 8 and head[:4] == b"IDST" and struct.unpack_from("<i", head, 4)[0] in VERSIONS


def run(job: DecompileJob) -> None:
    from .model import decompile_source

    decompile_source(job)


DECOMPILER = Decompiler("source", accepts, run)
