"""When a response's events are due: seconds for the linear model, engine steps for batched."""

from __future__ import annotations

import asyncio
from typing import Protocol

from emulator.engine.scheduler import BatchScheduler, EngineSequence


class Pacer(Protocol):
    """Paces one response; event offsets are in the pacer's own unit and never decrease."""

    def start(self) -> None:
        """The response begins (after any injected stall)."""
        ...

    def may_wait(self, offset: float) -> bool:
        """Whether reaching ``offset`` can take any time."""
        ...

    def reached(self) -> float:
        """Events at offsets up to this are due now."""
        ...

    async def wait_until(self, offset: float) -> None: ...

    def close(self) -> None:
        """The response is over: complete, cut, or its client left."""
        ...


class LinearPacer:
    """Offsets are seconds after the response starts."""

    __slots__ = ("_began", "_loop")

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._began = 0.0

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._began = self._loop.time()

    def may_wait(self, offset: float) -> bool:
        return offset > 0

    def reached(self) -> float:
        assert self._loop is not None, "start() first"
        return self._loop.time() - self._began

    async def wait_until(self, offset: float) -> None:
        delay = offset - self.reached()
        if delay > 0:
            await asyncio.sleep(delay)

    def close(self) -> None:
        pass


class SequencePacer:
    """Offsets are decode steps of one sequence in a batched engine; step 0 is the first token.

    The sequence is submitted when the response starts and taken out of the batch when
    the response ends early.
    """

    __slots__ = ("_scheduler", "sequence")

    def __init__(self, scheduler: BatchScheduler, sequence: EngineSequence) -> None:
        self._scheduler = scheduler
        self.sequence = sequence

    def start(self) -> None:
        self._scheduler.submit(self.sequence)

    def may_wait(self, offset: float) -> bool:
        return True

    def reached(self) -> float:
        return self.sequence.produced - 1

    async def wait_until(self, offset: float) -> None:
        await self.sequence.wait_for(int(offset) + 1)

    def close(self) -> None:
        self._scheduler.cancel(self.sequence)
