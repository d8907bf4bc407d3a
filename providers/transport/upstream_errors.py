"""Transport exceptions (aiohttp's, the lean client's, the socket's) as the UpstreamError
tree (providers/errors.py), for one backend: what `HttpTransport.map_upstream_errors` gives.
aiohttp's are looked for only once something imported aiohttp (no aiohttp error can exist
before), so mapping does not load it."""

from __future__ import annotations

import sys
from typing import Literal

from providers.errors import (
    UpstreamConnectError,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
)
from providers.transport.h1_client import H1ConnectError, H1ConnectTimeout


class UpstreamErrors:
    """A context that turns a transport exception into the UpstreamError tree for one
    backend. Stateless, so one per transport serves every request (a class, not
    `@contextmanager`: it wraps every upstream exchange)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, trace: object) -> Literal[False]:
        error = None if exc is None else self.mapped(exc)
        if error is not None:
            raise error from None
        return False

    def mapped(self, exc: BaseException) -> UpstreamError | None:
        """`exc` as an UpstreamError; None when it is not a transport failure."""
        name = self._name
        if isinstance(exc, TimeoutError) or _aiohttp_error(exc, "ServerTimeoutError"):
            connecting = isinstance(exc, H1ConnectTimeout) or _aiohttp_error(
                exc, "ConnectionTimeoutError"
            )
            phase = "connect" if connecting else "response"
            return UpstreamTimeout(f"backend {name} timed out ({phase})", backend=name)
        if isinstance(exc, H1ConnectError) or _aiohttp_error(exc, "ClientConnectorError"):
            return UpstreamConnectError(
                f"cannot connect to backend {name}: {type(exc).__name__}", backend=name
            )
        if isinstance(exc, OSError) or _aiohttp_error(exc, "ClientError"):
            return UpstreamProtocolError(
                f"backend {name} broke the connection: {type(exc).__name__}", backend=name
            )
        return None


def _aiohttp_error(exc: BaseException, kind: str) -> bool:
    """Whether `exc` is aiohttp's `kind` of error; never, while aiohttp is not loaded."""
    aiohttp = sys.modules.get("aiohttp")
    return aiohttp is not None and isinstance(exc, getattr(aiohttp, kind))
