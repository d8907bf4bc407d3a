"""``python -m bench.workloads.cascade``: write a cascade workload as JSON Lines."""

from bench.workloads.cascade.workload import main

raise SystemExit(main())
