"""Background tasks: started on an exit stack, stopped by cancelling and waiting for them."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

from gateway.process.tasks import cancel_and_wait, start_task


class Loop:
    """A background loop that notes how it ended. Its clean-up awaits `cleanup_turns` loop
    turns, then `finish` if given: a stop must wait for it, not just cancel."""

    def __init__(
        self, *, fails: bool = False, cleanup_turns: int = 3, finish: asyncio.Event | None = None
    ) -> None:
        self.started = asyncio.Event()
        self.cleaning = asyncio.Event()
        self.cleaned_up = False
        self._fails = fails
        self._cleanup_turns = cleanup_turns
        self._finish = finish

    async def run(self) -> None:
        self.started.set()
        try:
            if self._fails:
                raise RuntimeError("loop bug")
            await asyncio.Event().wait()  # until cancelled
        finally:
            self.cleaning.set()
            for _ in range(self._cleanup_turns):
                await asyncio.sleep(0)
            if self._finish is not None:
                await self._finish.wait()
            self.cleaned_up = True


async def test_closing_the_stack_cancels_the_task_and_waits_for_its_end() -> None:
    loop = Loop()
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
            await asyncio.Event().wait()  # until cancelled
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
    broken, slow = Loop(fails=True, cleanup_turns=0), Loop()
    tasks = [asyncio.create_task(broken.run()), asyncio.create_task(slow.run())]
    await asyncio.gather(broken.started.wait(), slow.started.wait())
    with pytest.raises(RuntimeError, match="loop bug"):
        await cancel_and_wait(*tasks)
    assert slow.cleaned_up and all(task.done() for task in tasks)


async def test_the_callers_own_cancellation_is_not_swallowed() -> None:
    finish = asyncio.Event()
    loop = Loop(finish=finish)
    inner = asyncio.create_task(loop.run())
    await loop.started.wait()
    stopper = asyncio.create_task(cancel_and_wait(inner))
    await loop.cleaning.wait()  # the stopper now waits for the inner task's slow clean-up
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    assert not inner.done(), "the clean-up it was waiting for goes on"
    finish.set()
    await asyncio.wait([inner])
    assert loop.cleaned_up
