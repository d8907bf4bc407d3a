"""Cascades: a cheap tier first, its answer checked, a stronger tier only when it fails.

Owns the `cascades` config section (`config.py`), what a check reads of the request and
of an answer (`answer.py`, with the token log-probabilities of `logprobs.py`), the answer
checks — a plugin family of pure functions, each with its reason (`checks/`) — and their
verdict (`verdict.py`), the learned starting tier (`start.py`: a pure policy over a
bounded, decayed book of how each kind of request fared on each tier) and the counters
the metrics and the dashboard read (`tally.py`). Running a request through the tiers is
the HTTP edge's (`gateway.http.cascade_leg`): it dispatches, holds and relays.

May import the config schema's base, the quality signals' response parsing and loop
detector, `policies` and `providers`' value types; never the HTTP edge or the process.
"""
