"""The telemetry cost benchmark, short: it runs end to end and reports every measure."""

from __future__ import annotations

import re

import pytest

from gateway.cli import main


def test_quick_telemetry_benchmark_reports_each_measure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "telemetry", "--quick"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"telemetry off: \d+ us", out)
    assert re.search(r"metrics\+dashboard\+store: \d+ us", out)
    sinks = dict(re.findall(r"(\w+) ([\d.]+) us", out.split("per record:")[1].splitlines()[0]))
    assert set(sinks) == {"metrics", "series", "store", "log"}
    assert all(float(v) > 0 for k, v in sinks.items() if k != "log")
    assert re.search(r"store writes to SQLite: [\d,]+ rows/s", out)
