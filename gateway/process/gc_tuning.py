"""`switchyard serve`'s garbage-collector settings: freeze what start-up built, collect less often.

CPython's cyclic collector runs a young-generation pass every 700 net container
allocations by default, and every so often a full pass over every tracked object. A served
gateway allocates a few hundred containers per request (parsed JSON, decision records,
snapshots) that almost all die by reference counting, while start-up leaves a large heap
that lives as long as the process (pydantic schemas, the tokenizer's tables, the app). With
the defaults the collector took ~200 µs of CPU per request at 64 connections
(`docs/benchmarks.md`). After start-up the served process moves that heap into the
permanent generation (`gc.freeze`) and raises the young-generation threshold, so passes are
rarer and never walk the start-up heap; cycles are still collected, only later.

Applied by the app's lifespan in a served process only, like the signal handlers; the
previous thresholds come back when it ends (tests and benchmarks that build the app in
their own process keep theirs).
"""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from contextlib import contextmanager

logger = logging.getLogger("switchyard")


@contextmanager
def tuned_collector(gen0_threshold: int, *, freeze: bool) -> Iterator[None]:
    """While open: `gen0_threshold` for the young generation (0 keeps CPython's), and with
    `freeze` every object alive on entry left out of later collections."""
    previous = gc.get_threshold()
    if gen0_threshold > 0:
        gc.set_threshold(gen0_threshold, *previous[1:])
    if freeze:
        gc.collect()  # what start-up left as garbage is freed, not frozen
        gc.freeze()
    logger.debug("gc: thresholds %s, %d objects frozen", gc.get_threshold(), gc.get_freeze_count())
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        if freeze:
            gc.unfreeze()
