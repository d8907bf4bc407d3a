"""Background tasks: started on an exit stack, stopped by cancelling and waiting for them."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

from gateway.process.tasks import cancel_and_wait, start_task


class Loop:
    """A background loop that notes how it ended."""

    def __init__(self, *, fails: bool = False, cleanup_s: float = 0.0) -> None:
        self.started = asyncio.Event()
        self.cleaned_up = False
        self._fails = fails
        self._cleanup_s = cleanup_s

    async def run(self) -> None:
        self.started.set()
        try:
            if self._fails:
                raise RuntimeError("loop bug")
            await asyncio.sleep(3600)
        finally:
            # Clean-up that itself awaits: the stop must wait for it, not just cancel.
            await asyncio.sleep(self._cleanup_s)
            self.cleaned_up = True


async def test_closing_the_stack_cancels_the_task_and_waits_for_its_end() -> None:
    loop = Loop(cleanup_s=0.05)
    async with AsyncExitStack() as stack:
        task = start_task(stack, loop.run(), name="test-loop")
        assert task.get_name() == "test-loop"
        await loop.started.wait()
    assert task.cancelled()
    assert loop.cleaned_up


async def test_tasks_stop_in_reverse_order_of_start() -> None:
    ended: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            ended.append(name)

    async with AsyncExitStack() as stack:
        for name in ("first", "second", "third"):
            start_task(stack, forever(name), name=name)
        await asyncio.sleep(0)
    assert ended == ["third", "second", "first"]


async def test_none_and_finished_tasks_are_fine() -> None:
    done = asyncio.create_task(asyncio.sleep(0))
    await done
    await cancel_and_wait(None, done)
    await cancel_and_wait()
    assert done.done() and not done.cancelled()


async def test_a_failed_task_is_raised_once_every_task_has_ended() -> None:
    broken, slow = Loop(fails=True), Loop(cleanup_s=0.05)
    tasks = [asyncio.create_task(broken.run()), asyncio.create_task(slow.run())]
    await asyncio.gather(broken.started.wait(), slow.started.wait())
    with pytest.raises(RuntimeError, match="loop bug"):
        await cancel_and_wait(*tasks)
    assert slow.cleaned_up and all(task.done() for task in tasks)


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    loop = Loop(cleanup_s=0.5)
    inner = asyncio.create_task(loop.run())
    await loop.started.wait()
    stopper = asyncio.create_task(cancel_and_wait(inner))
    await asyncio.sleep(0.05)  # the stopper now waits for the inner task's slow clean-up
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    await asyncio.wait([inner])
