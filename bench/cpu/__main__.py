"""`python -m bench.cpu [options]`: the same as `switchyard bench cpu`."""

import sys

from .cli import main

sys.exit(main())
