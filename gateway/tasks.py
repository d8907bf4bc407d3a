"""Background tasks: started under a name, stopped by cancelling them and waiting for the end.

Every loop the gateway runs beside requests (health probes, quality refresh and probes,
engine scrapes, the telemetry sampler) stops the same way, through `cancel_and_wait`;
`start_task` also registers that stop on the exit stack the gateway starts up with.
"""

from __future__ import annotations

import asyncio
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
