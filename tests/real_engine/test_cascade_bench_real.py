"""`switchyard bench cascade --quick` on a real llama.cpp small tier (SmolLM2-135M): the
short CI version. Asserts only what holds whatever the machine's speed and the small
model's answers: every cascade answer passes its checks or says it failed them, the strong
stand-in is right, and the small tier answers what it can."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.cascade.cli import parse, run


@pytest.mark.timeout(900)
async def test_the_quick_cascade_bench_on_a_real_small_tier(llama_model: Path) -> None:
    result: dict[str, Any] = await run(parse(["--quick", "--small", "real"]))
    assert result["small"] == "real"
    for kinds in result["workloads"].values():
        for kind, rows in kinds.items():
            assert rows["always-strong"]["accuracy"] == 1.0, kind
            for policy, row in rows.items():
                if policy.startswith("cascade"):
                    assert row["unmarked_failures"] == 0, (kind, policy)
                    assert row["requests"] == row["answered_by"].get("small", 0) * 0 + 3
