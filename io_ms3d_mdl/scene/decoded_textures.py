"""Textures in formats Blender cannot open (PCX skins of MD2-era MilkShape models), decoded here into pixels the
Blender side turns into images, as decoded VTFs are. No ``bpy``.

Each file is decoded once per import, within the budget: a texture over the pixel budget, or one the import's
textures leave no room for, is not decoded. A file that cannot be decoded (cut short, corrupt) costs a warning
naming it and the byte offset, and a placeholder image; the import goes on. Other formats are left to Blender.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np

from ..budget import current_budget
from ..errors import BudgetExceeded, FormatError, Warnings
from ..formats.images import read_pcx
from .types import ImageRef

# extension → reader(path, max_pixels) giving (height, width, 4) uint8 RGBA, top row first
DECODERS: dict[str, Callable[[str, int], np.ndarray]] = {".pcx": read_pcx}


class PixelAllowance:
    """The texture pixels an import may still decode (``Budget.import_pixels``): each texture decodes within the
    per-texture budget and what its import has left."""

    def __init__(self) -> None:
        self.left = current_budget().import_pixels

    def refusal(self, name: str) -> str | None:
        """Why ``name`` is not decoded (nothing left), or None."""
        if self.left > 0:
            return None
        return (
            f"texture '{name}' was not decoded: the import's textures reached the work budget of "
            f"{current_budget().import_pixels:,} pixels; raise the Work Limit to decode it"
        )

    def limit(self) -> int:
        return min(current_budget().texture_pixels, self.left)

    def spend(self, pixels: int) -> None:
        self.left -= pixels


class TextureDecoder:
    """Gives found textures that Blender cannot read their pixels (one decoder per import)."""

    def __init__(self, warnings: Warnings) -> None:
        self.warnings = warnings
        self.pixels = PixelAllowance()
        self._done: dict[str, np.ndarray | None] = {}

    def attach(self, ref: ImageRef) -> ImageRef:
        path = ref.resolved_path
        decoder = DECODERS.get(os.path.splitext(path)[1].lower()) if path else None
        if decoder is None:
            return ref
        ref.loadable = False  # without pixels it becomes a placeholder, never a file Blender fails to read
        if path not in self._done:
            self._done[path] = self._decode(path, decoder)
        ref.pixels = self._done[path]
        return ref

    def _decode(self, path: str, decoder: Callable[[str, int], np.ndarray]) -> np.ndarray | None:
        name = os.path.basename(path)
        refusal = self.pixels.refusal(name)
        if refusal:
            self.warnings.add(refusal)
            return None
        try:
            pixels = decoder(path, self.pixels.limit())
        except BudgetExceeded:
            raise
        except FormatError as exc:
            where = f" (at byte offset {exc.offset})" if exc.offset is not None else ""
            self.warnings.add(f"texture '{name}' could not be decoded: {exc.reason}{where}; a placeholder is used")
            return None
        self.pixels.spend(pixels.shape[0] * pixels.shape[1])
        return pixels
