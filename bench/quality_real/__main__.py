"""`python -m bench.quality_real`: the same as `switchyard bench quality-real`."""

from bench.quality_real.cli import main

raise SystemExit(main())
