"""`python -m bench.matrix [options]`."""

import sys

from .cli import main

sys.exit(main())
