"""Issue 4's detection targets, on the deterministic harness (virtual clock, seeded faults)."""

from __future__ import annotations

import pytest

from bench.quality.cli import RunLimits, run_scenario, table
from bench.quality.detection import SCENARIOS, Outcome, Scenario

LIMITS = RunLimits(twin_requests=2000)
_outcomes: dict[str, Outcome] = {}


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
async def test_fault_is_caught_twin_spared_backend_restored(scenario: Scenario) -> None:
    outcome = await run_scenario(scenario, LIMITS)
    _outcomes[scenario.name] = outcome
    if scenario.target_requests is not None:
        assert outcome.faulty_requests_to_ejection is not None
        assert outcome.faulty_requests_to_ejection <= scenario.target_requests
    if scenario.target_cycles is not None:
        assert outcome.cycles_to_ejection is not None
        assert outcome.cycles_to_ejection <= scenario.target_cycles
    assert outcome.twin_ejections == 0
    assert outcome.seconds_to_restore is not None, "healthy again after the fault cleared"
    # the doubling back-off bounds flapping while the fault lasts and after
    assert outcome.faulty_state_changes <= 16
    assert outcome.met
    assert scenario.fault in table([outcome])


def test_healthy_twins_served_ten_thousand_requests_without_an_ejection() -> None:
    if len(_outcomes) < len(SCENARIOS):
        pytest.skip("needs every scenario of this module to have run")
    assert sum(o.twin_requests for o in _outcomes.values()) >= 10_000
    assert sum(o.twin_ejections for o in _outcomes.values()) == 0
