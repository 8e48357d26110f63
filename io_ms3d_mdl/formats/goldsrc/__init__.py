"""GoldSrc (Half-Life 1) studio models, version 10. No ``bpy``."""

from .animation import decode_sequence
from .model import GsFile, GsSequence, GsTexture
from .reader import is_goldsrc, read_goldsrc, read_goldsrc_bytes

__all__ = ["GsFile", "GsSequence", "GsTexture", "decode_sequence", "is_goldsrc", "read_goldsrc", "read_goldsrc_bytes"]
