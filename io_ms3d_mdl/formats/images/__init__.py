"""Image formats that models name as textures but Blender cannot open itself (PCX, from the Quake/MD2 era that
MilkShape models come from). Each decodes to (height, width, 4) uint8 RGBA, top row first, like the VTF decoder,
so the Blender side builds an image from pixels. They belong to no one model format, hence their own package."""

from .pcx import TextureTooLarge, decode_pcx, read_pcx

__all__ = ["TextureTooLarge", "decode_pcx", "read_pcx"]
