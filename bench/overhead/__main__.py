"""`python -m bench.overhead [options]`: the same as `switchyard bench overhead`."""

import sys

from .cli import main

sys.exit(main())
