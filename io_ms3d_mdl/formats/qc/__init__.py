"""QC text for studiomdl, token by token as its tokenizer reads it (see ``writer`` for the stable API)."""

from .writer import QcWriter, Quoted, Raw, qc_name, qc_token

__all__ = ["QcWriter", "Quoted", "Raw", "qc_name", "qc_token"]
