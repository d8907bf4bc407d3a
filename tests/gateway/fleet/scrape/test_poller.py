"""The one poller for engine scrapes: its loop per target, its stop, its failure log and the
addresses it logs; the reads themselves are tested through the two scrapers."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import pytest

from gateway.config.backends import BackendConfig
from gateway.config.engine_polls import MetricsConfig
from gateway.config.root import HealthConfig
from gateway.fleet.scrape.poller import Poller, loggable_url
from gateway.fleet.state import FleetState
from tests.conftest import eventually


@dataclass(frozen=True)
class Target:
    backend: str
    config: MetricsConfig


class CountingPoller(Poller[Target]):
    """Reads nothing: counts its polls, and fails on a backend named `bug`."""

    task_name = "counting"
    label = "counting"
    verb = "counting"
    logger = logging.getLogger("switchyard.test_poller")
    accept = "*/*"

    def __init__(self, targets: list[Target], state: FleetState) -> None:
        super().__init__(targets, state)
        self.polls: dict[str, int] = {}

    async def poll_once(self, target: Target) -> None:
        if target.backend == "bug":
            raise RuntimeError("a bug in a scraper")
        self.polls[target.backend] = self.polls.get(target.backend, 0) + 1


def poller(*intervals: tuple[str, float]) -> CountingPoller:
    targets = [
        Target(name, MetricsConfig(interval_s=every, timeout_s=0.1, stale_after_s=1.0))
        for name, every in intervals
    ]
    backends = [
        BackendConfig.model_validate(
            {"name": t.backend, "kind": "vllm", "base_url": "http://h/v1", "models": ["m"]}
        )
        for t in targets
    ]
    return CountingPoller(targets, FleetState(backends, HealthConfig()))


@pytest.mark.usefixtures("virtual_time")
async def test_each_target_is_polled_on_its_own_interval_until_stopped() -> None:
    """On the loop's virtual clock: a poll at once, then one on each beat of the target's
    own interval (0.6 s hold 12 beats of 0.05 s and 2 of 0.25 s)."""
    counting = poller(("fast", 0.05), ("slow", 0.25))
    counting.start()
    await asyncio.sleep(0.6)
    await counting.stop()
    polls = dict(counting.polls)
    assert 12 <= polls["fast"] <= 13
    assert 3 <= polls["slow"] <= 4
    await asyncio.sleep(1.0)
    assert counting.polls == polls, "stopped"


async def test_the_session_is_made_on_first_use_and_closed_by_stop() -> None:
    counting = poller(("a", 0.05))
    session = counting.session
    assert counting.session is session
    await counting.stop()
    assert session.closed
    await counting.stop()  # stopping twice, or before starting, is fine


async def test_a_bug_stops_the_polling_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    counting = poller(("a", 0.05), ("bug", 0.05))
    counting.start()

    async def logged() -> bool:
        return any(r.levelname == "ERROR" for r in caplog.records)

    await eventually(logged, "the crash logged")
    assert [r.getMessage() for r in caplog.records] == ["counting: polling stopped"]
    with pytest.raises(RuntimeError, match="a bug in a scraper"):
        await counting.stop()


@pytest.mark.parametrize(
    ("errors", "logged", "recovered"),
    [
        (["", ""], [], [False, False]),
        (["HTTP 503", "HTTP 503", ""], ["WARNING", "DEBUG", "INFO"], [False, False, True]),
        (["HTTP 503", "", "x"], ["WARNING", "INFO", "WARNING"], [False, True, False]),
    ],
)
def test_a_failure_is_logged_when_it_starts_and_when_it_ends(
    caplog: pytest.LogCaptureFixture, errors: list[str], logged: list[str], recovered: list[bool]
) -> None:
    caplog.set_level(logging.DEBUG, logger="switchyard.test_poller")
    counting = poller(("a", 0.05))
    (target,) = counting.targets
    seen = [counting.note(target, "http://u:pw@h/m?k=1", error, "/m") for error in errors]
    assert [r.levelname for r in caplog.records] == logged
    assert seen == recovered
    assert "pw" not in caplog.text and "k=1" not in caplog.text


@pytest.mark.parametrize(
    ("url", "logged"),
    [
        ("http://user:s3cret@h:9090/metrics?token=abc", "http://h:9090/metrics"),
        ("http://[::1]:30000/slots#x", "http://[::1]:30000/slots"),
        ("https://gpu-3.internal/metrics", "https://gpu-3.internal/metrics"),
    ],
)
def test_logged_addresses_have_no_credentials(url: str, logged: str) -> None:
    assert loggable_url(url) == logged
