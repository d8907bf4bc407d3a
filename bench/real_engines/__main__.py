"""`python -m bench.real_engines [options]`: see `--help`."""

import sys

from .cli import main

sys.exit(main())
