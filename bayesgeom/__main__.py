"""``python -m bayesgeom``: the ``bayesgeom`` command line."""

import sys

from bayesgeom.analyses.cli import main

sys.exit(main())
