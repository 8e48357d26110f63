"""Moved to ``filesystem.no_links`` (the decompiler below ``cli`` writes through it too); this name is the same
module object, so ``from .no_links import ...`` and monkeypatching it keep working."""

import sys

from ..filesystem import no_links

sys.modules[__name__] = no_links
