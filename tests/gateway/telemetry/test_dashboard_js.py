"""The dashboard's scripts run under Node, without a page: the y axes' ticks (whole numbers
on a count axis) and the words a backend's health note uses for its quality."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

STATIC = Path(__file__).resolve().parents[3] / "gateway" / "telemetry" / "dashboard" / "static"
COUNT = {"minStep": 1, "integer": True}
"""charts.js's `count` unit, as far as the scale reads it."""


@pytest.fixture(scope="module")
def run_js(tmp_path_factory: pytest.TempPathFactory) -> Any:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    # A copy marked as ES modules, so Node imports the files as the browser does.
    folder = tmp_path_factory.mktemp("static")
    for script in STATIC.glob("*.js"):
        shutil.copy(script, folder)
    (folder / "package.json").write_text('{"type": "module"}', encoding="utf-8")

    def run(module: str, call: str) -> Any:
        code = f"import * as m from './{module}'; console.log(JSON.stringify({call}));"
        done = subprocess.run(
            [node, "--input-type=module", "-e", code],
            cwd=folder,
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        return json.loads(done.stdout)

    return run


@pytest.mark.parametrize(
    ("hi", "unit", "ticks"),
    [
        (10, COUNT, [0, 5, 10]),
        (9, COUNT, [0, 5, 10]),
        (7, COUNT, [0, 2, 4, 6, 8]),
        (3, COUNT, [0, 1, 2, 3]),
        (0, COUNT, [0, 1]),
        (100, COUNT, [0, 25, 50, 75, 100]),
        (10, {}, [0, 2.5, 5, 7.5, 10]),
        (1, {}, [0, 0.25, 0.5, 0.75, 1]),
    ],
    ids=["count-10", "count-9", "count-7", "count-3", "count-0", "count-100", "ms-10", "ratio"],
)
def test_a_count_axis_ticks_whole_numbers(run_js: Any, hi: float, unit: Any, ticks: list) -> None:
    scale = run_js("charts.js", f"m.yScale(0, {hi}, {json.dumps(unit)})")
    assert scale["ticks"] == ticks


@pytest.mark.parametrize(
    ("backend", "note"),
    [
        ({"summary": {"requests": 0}, "quality": []}, "no traffic yet"),
        ({}, "no traffic yet"),
        ({"summary": {"requests": 4}, "quality": []}, "no quality evidence yet"),
        (
            {"summary": {"requests": 0}, "quality": [{"signals": [{"total": 12.5}]}]},
            "quality within peers' range",
        ),
    ],
    ids=["idle", "nothing-known", "traffic-no-evidence", "evidence"],
)
def test_a_backend_without_traffic_is_not_said_to_be_within_its_peers(
    run_js: Any, backend: dict[str, Any], note: str
) -> None:
    assert run_js("panels.js", f"m.qualityNote({json.dumps(backend)})") == note
