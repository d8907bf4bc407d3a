"""Several faulty backends at once behind one route, through the real gateway."""

from __future__ import annotations

from bench.quality.fleet import FAULTY, TWINS, FleetLimits, run_once, summary, table


async def test_two_faulty_backends_are_ejected_with_evidence_and_twins_are_spared() -> None:
    outcome = await run_once("idle", 11, FleetLimits(requests=300))
    assert outcome.twin_ejections == 0
    loop35 = outcome.backends["loop35"]
    assert loop35.ejected_after is not None
    for name in FAULTY:
        backend = outcome.backends[name]
        if backend.ejected_after is not None:  # every ejection kept what caused it
            assert backend.audit_entries >= 1
            assert backend.first_trigger
    for name in TWINS:
        assert outcome.backends[name].final_state == "healthy"
    assert "| idle | 11 |" in table([outcome])
    assert "healthy twins" in summary([outcome])
