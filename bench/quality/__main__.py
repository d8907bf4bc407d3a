"""`python -m bench.quality [options]`: the same as `switchyard bench quality`."""

import sys

from .cli import main

sys.exit(main())
