"""Builders of Observations and a one-signal view of `evaluate` for the signals' tests."""

from __future__ import annotations

from typing import Any

from gateway.quality.config import SignalParams
from gateway.quality.signals.observation import Observation
from gateway.quality.signals.rules import evaluate

PARAMS = SignalParams()


def obs(**fields: Any) -> Observation:
    """An ok Observation of backend b1 and model m, with the given fields."""
    defaults: dict[str, Any] = {"backend": "b1", "model": "m", "at": 0.0, "outcome": "ok"}
    return Observation(**{**defaults, **fields})


def verdict(signal: str, observation: Observation, params: SignalParams = PARAMS) -> str | None:
    """'good', the bad event's detail, or None when the signal made no event."""
    events = [event for event in evaluate(observation, params) if event.signal == signal]
    assert len(events) <= 1, events
    if not events:
        return None
    return events[0].detail if events[0].bad else "good"
