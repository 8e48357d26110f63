"""``python -m io_ms3d_mdl``: the same command line as ``io-ms3d-mdl`` (see ``cli/``)."""

from .cli import entry

entry()
