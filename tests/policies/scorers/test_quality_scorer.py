from __future__ import annotations

import pytest

from policies.scorers.quality_scorer import QualityScorer
from policies.snapshot import QualityView
from tests.policies.builders import fleet, snapshot


@pytest.mark.parametrize(
    ("view", "sla_weight", "value", "reason"),
    [
        pytest.param(None, 0.25, 1.0, "quality not tracked", id="untracked"),
        pytest.param(
            QualityView(state="healthy", reason="no bad evidence"),
            0.25,
            1.0,
            "quality healthy: fidelity 1.00, SLA 1.00",
            id="healthy",
        ),
        pytest.param(
            QualityView(fidelity=0.5, sla=1.0, state="probation", reason="looping output 5/10"),
            0.0,
            0.5,
            "quality probation: fidelity 0.50, SLA 1.00; looping output 5/10",
            id="fidelity-only",
        ),
        pytest.param(
            QualityView(fidelity=1.0, sla=0.25, state="healthy", reason="TTFT over target"),
            0.5,
            0.5,
            "quality healthy: fidelity 1.00, SLA 0.25; TTFT over target",
            id="sla-half",
        ),
    ],
)
def test_quality_scorer(
    view: QualityView | None, sla_weight: float, value: float, reason: str
) -> None:
    scorer = QualityScorer("q", QualityScorer.Params(sla_weight=sla_weight))
    quality = {"a": view} if view is not None else {}
    score = scorer.score(snapshot(fleet("a"), quality=quality), fleet("a"))["a"]
    assert score.value == pytest.approx(value)
    assert score.reason == reason
