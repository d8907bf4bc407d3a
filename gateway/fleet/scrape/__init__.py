"""What engines say of themselves, polled in the background: Prometheus `/metrics`
(`engine_metrics.py`, `engine_scrape.py`) and llama-server's `/slots` and `/props`
(`llama_cpp_status.py`, `llama_cpp_scrape.py`), kept per backend as `EngineReadings`
(`engine_readings.py`). Both scrapers are `Poller`s (`poller.py`): one session, bounds,
loop and failure log for every background read of an engine.

May import `gateway.fleet`'s state, `gateway.config`, `gateway.process.tasks` and
`providers`; never the request path above the fleet.
"""
