"""Load and soak benchmarks (issue 16, item 7): held streams, a soak, a backend killed and
Redis and PostgreSQL stopped mid-run, a flood of slow clients (issue 36), each one command
under `switchyard bench`."""
