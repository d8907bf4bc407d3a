"""Decision ids come from a pool of OS randomness: unique, 8 bytes, and never shared with a
forked child."""

from __future__ import annotations

import gc
import os

from gateway.routing import router as routing
from gateway.routing.router import DecisionIds


def test_ids_are_eight_random_bytes_and_do_not_repeat_across_refills() -> None:
    ids = DecisionIds()
    drawn = [ids.next() for _ in range(3 * DecisionIds._POOL + 5)]
    assert all(len(i) == 8 for i in drawn)
    assert len(set(drawn)) == len(drawn)


def test_a_forked_child_draws_from_a_pool_of_its_own() -> None:
    ids = DecisionIds()
    ids.next()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next id, to the parent
        os.close(read)
        os.write(write, ids.next())
        os._exit(0)
    os.close(write)
    child = os.read(read, 8)
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 8
    assert child != ids.next()  # without the drop both would take the pool's second id


def test_routers_built_and_dropped_leave_no_fork_state_behind() -> None:
    """Each config reload builds a router and its ids: the fork hook's set holds only the
    live ones, so reloads do not grow it."""
    gc.collect()
    before = len(routing._LIVE_IDS)
    kept = DecisionIds()
    for _ in range(200):
        DecisionIds().next()
    gc.collect()
    assert len(routing._LIVE_IDS) == before + 1
    assert kept in routing._LIVE_IDS
