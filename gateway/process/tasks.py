"""Background tasks: started under a name, stopped by cancelling them and waiting for the end.

Every loop the gateway runs beside requests (health probes, quality refresh and probes,
engine scrapes, the telemetry sampler) stops the same way, through `cancel_and_wait`;
`start_task` also registers that stop on the exit stack the gateway starts up with.
Periodic loops wait with `sleep_to_beat`, so those of the same period wake together.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Coroutine
from contextlib import AsyncExitStack
from typing import Any


def start_task(
    stack: AsyncExitStack, coro: Coroutine[Any, Any, None], *, name: str
) -> asyncio.Task[None]:
    """Run `coro` as a task called `name`; closing `stack` cancels it and waits for it."""
    task = asyncio.create_task(coro, name=name)
    stack.push_async_callback(cancel_and_wait, task)
    return task


async def cancel_and_wait(*tasks: asyncio.Task[Any] | None) -> None:
    """Cancel the tasks (None: never started) and return once every one has ended.

    A task's own failure is raised once all have ended. Unlike awaiting each task under
    `suppress(CancelledError)`, a cancellation of the caller itself is not swallowed.
    """
    started = [task for task in tasks if task is not None]
    if not started:
        return
    for task in started:
        task.cancel()
    await asyncio.wait(started)
    for task in started:
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure


def beat_delay(now: float, period_s: float) -> float:
    """Seconds from `now` to the next whole multiple of `period_s` on the same clock, at
    least a twentieth of the period away (a timer that fired a little early does not
    fire again at once)."""
    target = (math.floor(now / period_s) + 1) * period_s
    if target - now < period_s / 20:
        target += period_s
    return target - now


async def sleep_to_beat(period_s: float) -> None:
    """Sleep until the event loop's clock reaches the next whole multiple of `period_s`.

    Each wake of an idle process costs CPU of its own (caches and, on a VM, the vCPU are
    cold again), so loops that tick once a second (uvicorn's, the sampler's, the quality
    book's refresh) wake on the same beat, one wake for all of them, instead of each at
    its own phase; a 10 s loop's beats are among the 1 s loops' too.
    """
    loop = asyncio.get_running_loop()
    await asyncio.sleep(beat_delay(loop.time(), period_s))
