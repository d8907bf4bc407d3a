"""Which failed attempts count against a backend's quality: not the client's doing, and not
a backend that said it had no room (a 429) or was not ready yet (a loading llama-server)."""

from __future__ import annotations

import pytest

from gateway.quality.signals.passive import classify_failure


@pytest.mark.parametrize(
    ("code", "outcome", "kind"),
    [
        ("upstream_429", "capacity", "upstream_429"),
        ("upstream_not_ready", "capacity", "upstream_not_ready"),
        ("upstream_503", "error", "server_error"),
        ("upstream_400", "client_error", "upstream_400"),
        ("upstream_timeout", "error", "timeout"),
        ("client_disconnected", "cancelled", "client_disconnected"),
    ],
)
def test_classify_failure(code: str, outcome: str, kind: str) -> None:
    assert classify_failure(code) == (outcome, kind)
