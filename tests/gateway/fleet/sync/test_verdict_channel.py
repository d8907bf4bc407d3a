"""What every channel of peer verdicts does alike (`VerdictChannel`), on the simplest
channel there could be: a note on a backend, believed by a peer that knows the backend.
What health's and quality's channels add is tested with each."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gateway.fleet.sync.peer_wire import decode_batch, encode_batch, text
from gateway.fleet.sync.verdict_channel import Envelope, VerdictChannel, VerdictKey
from gateway.fleet.sync.wire import WireError
from tests.gateway.fleet.sync.peers import MAX_AGE_S, WALL, Clock, send


class Notes(VerdictChannel[str, str]):
    """A note per backend; `None` stands for a note that is no longer news when sent."""

    name = "notes"

    def __init__(self, wall: Clock, max_queued: int = 8) -> None:
        super().__init__(MAX_AGE_S, max_queued, wall=wall)
        self.noted: dict[str, str] = {}

    def attach(self) -> None: ...

    def detach(self) -> None: ...

    def reassert(self) -> None: ...

    def note(self, backend: str, text: str) -> None:
        self._queue((backend, "note"), self._wall(), text)

    def _item(self, key: VerdictKey, verdict: str, now_unix: float) -> dict[str, object] | None:
        return {"backend": key[0], "why": verdict} if verdict != "old news" else None

    def _subject(self, item: dict[str, Any]) -> str:
        backend = text(item, "backend")
        if backend not in ("a", "b"):
            raise WireError(f"unknown backend {backend!r}")
        return backend

    def _apply_verdict(
        self, subject: str, item: dict[str, Any], envelope: Envelope, now_unix: float
    ) -> bool:
        note = f"{envelope.why} ({envelope.sender})"
        changed = self.noted.get(subject) != note
        self.noted[subject] = note
        return changed


class Replica:
    def __init__(self, replica_id: str, wall: Clock, max_queued: int = 8) -> None:
        self.id = replica_id
        self.share = Notes(wall, max_queued)


@pytest.fixture
def wall() -> Clock:
    return Clock(WALL)


def items(messages: list[bytes]) -> list[dict[str, Any]]:
    return [item for message in messages for item in decode_batch(message)[1]]


def test_a_verdict_is_sent_once_with_when_and_why(wall: Clock) -> None:
    one, two = Replica("r1", wall), Replica("r2", wall)
    one.share.note("a", "slow")
    messages = send(one, two)
    assert [decode_batch(m)[0] for m in messages] == ["r1"]
    assert items(messages) == [{"backend": "a", "why": "slow", "at": WALL}]
    assert two.share.noted == {"a": "slow (r1)"}
    assert send(one, two) == [], "what was taken is not sent again"
    assert (one.share.published, two.share.applied) == (1, 1)


def test_the_latest_verdict_per_key_is_kept_and_past_the_bound_the_oldest_goes(
    wall: Clock,
) -> None:
    one = Replica("r1", wall, max_queued=2)
    for backend, note in [("a", "first"), ("b", "other"), ("a", "latest"), ("c", "new")]:
        wall.now += 1
        one.share.note(backend, note)
    assert one.share.status()["queued"] == 2
    sent = items(one.share.take(one.id))
    assert [(i["backend"], i["why"], i["at"]) for i in sent] == [
        ("a", "latest", WALL + 3),
        ("c", "new", WALL + 4),
    ]
    assert one.share.status()["queued"] == 0


def test_what_is_no_longer_news_or_fresh_is_not_sent(wall: Clock) -> None:
    one = Replica("r1", wall)
    one.share.note("a", "old news")
    one.share.note("b", "slow")
    wall.now += MAX_AGE_S + 1  # e.g. Redis was down
    one.share.note("c", "fresh")
    assert [i["backend"] for i in items(one.share.take(one.id))] == ["c"]
    assert one.share.published == 1


@pytest.mark.parametrize(
    ("skew_s", "applied"),
    [
        pytest.param(-11.0, False, id="older-than-max-age"),
        pytest.param(11.0, False, id="from-further-ahead-than-max-age"),
        pytest.param(-9.0, True, id="late-but-within-max-age"),
        pytest.param(9.0, True, id="ahead-but-within-max-age"),
    ],
)
def test_stale_or_skewed_verdicts_are_ignored(skew_s: float, applied: bool) -> None:
    one = Replica("r1", Clock(WALL))
    two = Replica("r2", Clock(WALL - skew_s))  # r1's verdict is skew_s ahead of r2's clock
    one.share.note("a", "slow")
    send(one, two)
    assert (two.share.noted != {}) is applied
    assert (two.share.stale, two.share.applied) == ((0, 1) if applied else (1, 0))


@pytest.mark.parametrize(
    "item",
    [
        pytest.param({"backend": "zz", "at": WALL, "why": "x"}, id="unknown-to-the-channel"),
        pytest.param({"backend": "a", "why": "x"}, id="no-at"),
        pytest.param({"backend": "a", "at": True, "why": "x"}, id="at-not-a-number"),
        pytest.param({"backend": "a", "at": "now", "why": "x"}, id="at-a-string"),
        pytest.param({"backend": "a", "at": WALL}, id="no-why"),
        pytest.param({"backend": "a", "at": WALL, "why": 3}, id="why-not-a-string"),
    ],
)
def test_malformed_items_are_rejected_one_by_one(wall: Clock, item: dict[str, Any]) -> None:
    two = Replica("r2", wall)
    good = {"backend": "b", "at": WALL, "why": "fine"}
    two.share.apply(encode_batch("r1", [item, good])[0], two.id)
    assert two.share.noted == {"b": "fine (r1)"}
    assert (two.share.rejected, two.share.applied, two.share.stale) == (1, 1, 0)


def test_an_unreadable_batch_counts_once_and_the_own_echo_not_at_all(wall: Clock) -> None:
    one = Replica("r1", wall)
    one.share.apply(b"not json", one.id)
    one.share.apply(orjson.dumps({"v": 1, "from": "r1", "items": [1, 2, 3]}), one.id)
    assert one.share.rejected == 2
    one.share.note("a", "slow")
    twin = Replica("r1", wall)  # same id: pub/sub's echo of its own publish
    send(one, twin)
    assert (twin.share.noted, twin.share.rejected) == ({}, 0)


def test_the_status_counts_each_outcome(wall: Clock) -> None:
    one, two = Replica("r1", wall), Replica("r2", wall)
    one.share.note("a", "slow")
    send(one, two)
    send(one, two)
    stale = {"backend": "a", "at": WALL - 60, "why": "x"}
    two.share.apply(encode_batch("r1", [stale, {"backend": "zz"}])[0], two.id)
    two.share.note("b", "queued")
    assert two.share.status() == {
        "queued": 1,
        "published": 0,
        "applied": 1,
        "stale": 1,
        "rejected": 1,
    }
