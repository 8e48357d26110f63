"""The attachment table, read alike by every MDL layout (44–53 in ``mdl``, 2531 in ``mdl2531``): their records
differ only in an unused tail, so one reader serves both with the layout's dtype."""

from __future__ import annotations

import numpy as np

from ..binary import Cursor
from .model import MdlAttachment
from .records import records_at, rel


def read_attachments(cur: Cursor, header: np.void, num_bones: int, dtype: np.dtype) -> list[MdlAttachment]:
    """Every attachment, its bone checked against the model's ``num_bones`` (-1: none)."""
    out = []
    for off, a in records_at(cur, header, "numlocalattachments", "localattachmentindex", dtype, "attachments"):
        name = cur.string_at(rel(cur, off, a["sznameindex"]), "attachment name")
        bone = int(a["localbone"])
        if not -1 <= bone < num_bones:
            raise cur.error(f"attachment '{name}' names bone {bone} but the model has {num_bones} bones", off + 8)
        out.append(MdlAttachment(name, bone, a["local"].astype(np.float64), int(a["flags"])))
    return out
