"""`python -m bench.replay --trace FILE [options]`."""

import sys

from .cli import main

sys.exit(main())
