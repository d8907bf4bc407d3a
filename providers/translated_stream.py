"""A stream of OpenAI chunks translated from an upstream's own stream: the part every
translating adapter shares (the raw reader, opening, closing); the translation is theirs."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Self

from providers.base import UpstreamStream


class TranslatedStream(ABC):
    """An UpstreamStream over the raw one under it; `opened()` gives it started."""

    content_type = "text/event-stream"

    def __init__(self, raw: UpstreamStream) -> None:
        self._raw = raw
        self._raw_rest = raw.rest()
        self.first_chunk = b""
        # The limits are the raw stream's: its headers are the only ones there are.
        self.rate_limit = raw.rate_limit

    async def opened(self) -> Self:
        """This stream once `start()` has its first chunk; closed if that fails."""
        try:
            await self.start()
        except BaseException:
            await self.aclose()
            raise
        return self

    @abstractmethod
    async def start(self) -> None:
        """Read until there is a chunk to relay (`first_chunk`): the point where the
        backend is committed."""

    @abstractmethod
    def rest(self) -> AsyncIterator[bytes]: ...

    async def aclose(self) -> None:
        # The raw reader holds a stall timer until it is closed.
        if isinstance(self._raw_rest, AsyncGenerator):
            await self._raw_rest.aclose()
        await self._raw.aclose()
