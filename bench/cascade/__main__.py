import sys

from bench.cascade.cli import main

sys.exit(main())
