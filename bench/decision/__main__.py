"""`python -m bench.decision [options]`: the same as `switchyard bench decision`."""

import sys

from .cli import main

sys.exit(main())
