"""Convert whole folders headless: the ``io-ms3d-mdl batch`` command, runnable from a checkout.

    python scripts/batch_import.py [options] FILES_OR_FOLDERS...                     (with the bpy wheel)
    blender --background --python scripts/batch_import.py -- [options] FILES_OR_FOLDERS...

Everything lives in the package (``io_ms3d_mdl/cli/batch.py``; ``--help`` lists the options), so an installed
``io-ms3d-mdl batch`` and this script are the same code; this only puts the checkout on the module path.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # Blender's --python does not add the checkout

from io_ms3d_mdl.cli.batch import main
from io_ms3d_mdl.cli.needs_blender import run_and_leave

if __name__ == "__main__":
    argv = sys.argv[sys.argv.index("--") + 1 :] if "--" in sys.argv else sys.argv[1:]  # Blender's own come first
    run_and_leave(lambda: main(argv, prog="batch_import.py"))
