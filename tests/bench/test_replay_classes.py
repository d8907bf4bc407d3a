"""The seeded class and tenant rule: deterministic per session, its shares, trace values win."""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from bench.replay.classes import (
    BATCH,
    INTERACTIVE,
    ClassRule,
    only_class,
    only_tenant,
    session_key,
    with_classes,
)
from bench.replay.cli import add_arguments, class_rule
from bench.replay.trace import Message, TraceRequest, load_trace
from tests.bench.synthetic import agent_trace

SESSIONS = 20_000
TOLERANCE = 0.015  # ~4 standard deviations of a share of 20,000 draws; the draws are fixed


def _request(
    request_id: str, session: str | None, priority: str | None = None, tenant: str | None = None
) -> TraceRequest:
    message = (Message("user", ("a",)),)
    return TraceRequest(
        0, 1, request_id, "m", message, 4, session=session, start_s=0.0,
        priority=priority, tenant=tenant,
    )  # fmt: skip


def test_the_same_seed_and_session_give_the_same_draw_in_any_process() -> None:
    # blake2b, not the per-process salted hash(): these values hold in every run.
    rule = ClassRule()
    assert [rule.assign(f"session:s{i}") for i in range(3)] == [
        (BATCH, "tenant-1"),
        (INTERACTIVE, "tenant-0"),
        (BATCH, "tenant-0"),
    ]
    assert ClassRule(seed=7).assign("session:s0") == (INTERACTIVE, "tenant-0")


def test_a_session_keeps_its_class_and_tenant_and_a_lone_request_is_its_own_session() -> None:
    requests = [_request(f"r{i}", "chat-1") for i in range(5)]
    requests += [_request(f"lone{i}", None) for i in range(200)]
    labelled = with_classes(requests, ClassRule(seed=3))
    assert len({(r.priority, r.tenant) for r in labelled[:5]}) == 1
    assert len({(r.priority, r.tenant) for r in labelled[5:]}) > 1
    assert session_key(requests[5]) != session_key(_request("x", "lone0"))


def test_a_prefix_of_the_trace_keeps_its_assignment(tmp_path: Path) -> None:
    path = agent_trace(tmp_path / "t.jsonl")
    rule = ClassRule(seed=11)
    whole = with_classes(load_trace(path).requests, rule)
    cut = with_classes(load_trace(path, limit=4).requests, rule)
    assert cut == whole[:4]


def test_the_seed_changes_the_assignment() -> None:
    keys = [f"session:s{i}" for i in range(200)]
    assert [ClassRule(seed=0).assign(k) for k in keys] != [
        ClassRule(seed=1).assign(k) for k in keys
    ]


@pytest.mark.parametrize(
    ("seed", "share", "weights"),
    [(0, 0.3, (10.0, 3.0, 1.0)), (5, 0.5, (1.0, 1.0)), (9, 0.1, (4.0, 2.0, 1.0, 1.0))],
)
def test_shares_of_sessions_follow_the_share_and_weights(
    seed: int, share: float, weights: tuple[float, ...]
) -> None:
    rule = ClassRule(seed=seed, interactive_share=share, tenant_weights=weights)
    drawn = [rule.assign(f"session:s{i}") for i in range(SESSIONS)]
    classes = Counter(priority for priority, _ in drawn)
    tenants = Counter(tenant for _, tenant in drawn)
    assert classes[INTERACTIVE] / SESSIONS == pytest.approx(share, abs=TOLERANCE)
    for name, weight in zip(rule.tenants, weights, strict=True):
        assert tenants[name] / SESSIONS == pytest.approx(weight / sum(weights), abs=TOLERANCE)


@pytest.mark.parametrize(("share", "expected"), [(0.0, {BATCH}), (1.0, {INTERACTIVE})])
def test_shares_at_the_ends_give_one_class(share: float, expected: set[str]) -> None:
    rule = ClassRule(interactive_share=share)
    assert {rule.assign(f"session:s{i}")[0] for i in range(500)} == expected


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"priority": "realtime", "tenant": "acme"}, ("realtime", "acme")),
        ({"priority": "realtime"}, ("realtime", "tenant-1")),
        ({"tenant": "acme"}, (BATCH, "acme")),
        ({}, (BATCH, "tenant-1")),
    ],
)
def test_fields_from_the_trace_win_over_the_rule(
    given: dict[str, str], expected: tuple[str, str]
) -> None:
    # Session s0 draws batch / tenant-1 under seed 0 (see the first test).
    (labelled,) = with_classes([_request("r1", "s0", **given)], ClassRule())
    assert (labelled.priority, labelled.tenant) == expected


@pytest.mark.parametrize(
    ("share", "weights"),
    [(-0.1, (1.0,)), (1.5, (1.0,)), (0.3, ()), (0.3, (1.0, 0.0)), (0.3, (float("inf"),))],
)
def test_a_rule_with_bad_settings_is_refused(share: float, weights: tuple[float, ...]) -> None:
    with pytest.raises(ValueError, match="must be"):
        ClassRule(interactive_share=share, tenant_weights=weights)


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--trace", "t.jsonl", *argv])


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), None),
        (("--classes",), ClassRule()),
        (
            ("--classes", "--class-seed", "4", "--interactive-share", "0.6"),
            ClassRule(seed=4, interactive_share=0.6),
        ),
        (("--classes", "--tenant-weights", "5,1"), ClassRule(tenant_weights=(5.0, 1.0))),
    ],
)
def test_cli_flags_make_the_rule(argv: tuple[str, ...], expected: ClassRule | None) -> None:
    assert class_rule(_args(*argv)) == expected


def test_rule_settings_without_classes_are_refused() -> None:
    with pytest.raises(ValueError, match="need --classes"):
        class_rule(_args("--class-seed", "3"))


@pytest.mark.parametrize("weights", ["10,x", "1,0", "-1", "nan"])
def test_bad_tenant_weights_are_refused_by_the_parser(weights: str) -> None:
    with pytest.raises(SystemExit):
        _args("--classes", "--tenant-weights", weights)


def test_only_tenant_keeps_its_requests_closed_under_their_parents() -> None:
    requests = [
        _request("a1", session="s1", tenant="quiet"),
        _request("b1", session="s2", tenant="loud"),
        replace(
            _request("a2", session="s1", tenant="quiet"), parent="a1", after_s=1.0, start_s=None
        ),
        # A trace's own tenants may split a session: the child of a dropped parent goes too.
        replace(
            _request("x2", session="s2", tenant="quiet"), parent="b1", after_s=1.0, start_s=None
        ),
    ]
    assert [r.id for r in only_tenant(requests, "quiet")] == ["a1", "a2"]
    assert only_tenant(requests, "nobody") == []


def test_only_class_keeps_its_requests_closed_under_their_parents() -> None:
    requests = [
        _request("i1", session="s1", priority="interactive"),
        _request("b1", session="s2", priority="batch"),
        replace(
            _request("i2", session="s1", priority="interactive"),
            parent="i1",
            after_s=1.0,
            start_s=None,
        ),
        replace(
            _request("x2", session="s2", priority="interactive"),
            parent="b1",
            after_s=1.0,
            start_s=None,
        ),
    ]
    assert [r.id for r in only_class(requests, "interactive")] == ["i1", "i2"]
    assert [r.id for r in only_class(requests, "batch")] == ["b1"]
