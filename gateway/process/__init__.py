"""The process: building and starting a gateway (`service.py`), the generation it serves and
its reloads (`runtime.py`, `reload_plan.py`; DNS discovery's changes too, wired by
`discovery_wiring.py`), draining (`drain.py`), signals (`signals.py`), worker processes
(`workers.py`) and reloads that reach them all (`worker_reloads.py`), the pid file
(`pid_file.py`), what `serve` needs of its environment, also run by `check`
(`preflight.py`), the terminal's banner and logs (`terminal.py`), background tasks
(`tasks.py`), the garbage collector's tuning (`gc_tuning.py`), the embedded demo traffic
(`demo_traffic.py`) and the wiring of spend into budgets (`spend_wiring.py`).

May import every room below it; only `gateway.cli` and `gateway.http` import its top
(`service`, `runtime`, `workers`, `worker_reloads`). The request path's parts import only
`tasks` (and `drain`, from the relay).
"""
