"""The response of a relayed stream: its head through ASGI, then its body pulled chunk by
chunk through ASGI `send`, or spliced (gateway/http/relay/splice.py) when the server allows; the
way not taken is never made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response

from gateway.http.relay.splice import ClientWriter, Splice

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.types import Receive, Scope, Send


class RelayResponse(Response):
    """Streams an async byte iterator (or its `Splice`), then reports back through
    `on_close`."""

    def __init__(
        self,
        chunks: Callable[[], AsyncIterator[bytes]],
        *,
        media_type: str,
        headers: dict[str, str],
        on_close: Callable[[], Any],
        splice: Callable[[], Splice] | None = None,
    ) -> None:
        # Not Response.__init__: with no body it would announce Content-Length: 0.
        self.status_code = 200
        self.media_type = media_type
        self.background = None
        self.raw_headers = [
            (k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()
        ]
        self.raw_headers.append((b"content-type", media_type.encode("latin-1")))
        self._chunks = chunks
        """The body, pulled: made when the response is sent, unless it is spliced."""
        self._on_close = on_close
        self._splice = splice
        """The body, spliced (relayed by callbacks), when the server lets the response
        write to the client's socket."""
        self._pulled: AsyncIterator[bytes] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        # The caller's disconnect watcher cancels this task when the client leaves; the
        # relay's own `finally` then closes the upstream request.
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            writer = None if self._splice is None else ClientWriter.of(send)
            if self._splice is not None and writer is not None:
                await self._splice().run(writer)
            else:
                self._pulled = self._chunks()
                async for chunk in self._pulled:
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            aclose = getattr(self._pulled, "aclose", None)
            if aclose is not None:
                await aclose()
            self._on_close()
