"""``python -m bayesgeom``: the ``bayesgeom`` command line."""

import sys

from bayesgeom.analyses.cli import main

if __name__ == "__main__":
    sys.exit(main())
