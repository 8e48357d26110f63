"""Import models headless and print what was built: ``io-ms3d-mdl convert`` from a checkout, importing the bundled
example ``examples/house.ms3d`` when no file is given.

    python scripts/import_models.py [FILES...] [-o OUT.blend] [import options]      (what scripts/import.sh runs)

Exits 1 when any file failed. ``--help`` lists every import option.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from io_ms3d_mdl.cli.convert import main
from io_ms3d_mdl.cli.needs_blender import run_and_leave

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "house.ms3d"

if __name__ == "__main__":
    run_and_leave(lambda: main(sys.argv[1:], prog="import.sh", default_files=[str(EXAMPLE)]))
