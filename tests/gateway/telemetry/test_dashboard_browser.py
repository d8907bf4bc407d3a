"""The dashboard in headless Chromium, against a gateway under emulated traffic: the
numbers it renders are the gateway's own, and a screenshot is saved."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import RunningGateway, StartEmulator, StartGateway, make_config
from tests.gateway.render_dashboard import CHROMIUM, chromium
from tests.gateway.telemetry.test_metrics_endpoint import drained

SCREENSHOT_DIR_ENV = "SWITCHYARD_SCREENSHOT_DIR"


class Metrics(HTMLParser):
    """Collects the text of every element with a data-metric, in document order."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, str, str | None]] = []  # (metric, text, row backend)
        self._open: list[tuple[str, str | None]] = []
        self._row: str | None = None
        self._text: list[str] = []
        self.root: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "tr":
            self._row = a.get("data-backend")
        if tag == "main":
            self.root = a
        if "data-metric" in a:
            self._open.append((str(a["data-metric"]), self._row))
            self._text = []

    def handle_data(self, data: str) -> None:
        if self._open:
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if self._open and tag in ("span", "td", "div", "strong", "b"):
            metric, row = self._open.pop()
            self.found.append((metric, "".join(self._text).strip(), row))

    def first(self, metric: str, row: str | None = None) -> str:
        return next(text for m, text, r in self.found if m == metric and r == row)


def parse(dom: str) -> Metrics:
    parser = Metrics()
    parser.feed(dom)
    return parser


@pytest.fixture
def browser() -> str:
    if not shutil.which(CHROMIUM):
        if os.environ.get("CI") == "true":
            raise AssertionError("CI must install Debian's chromium (.ci/run does)")
        pytest.skip("chromium is not installed")
    return CHROMIUM


async def traffic(gw: RunningGateway, count: int) -> None:
    for i in range(count):
        body = {
            "model": "default",
            "messages": [{"role": "user", "content": f"question {i % 3} " * 40}],
            "max_tokens": 8,
            "stream": i % 2 == 0,
            "stream_options": {"include_usage": True} if i % 2 == 0 else None,
        }
        if not body["stream"]:
            del body["stream_options"]
        assert (await gw.client.post("/v1/chat/completions", json=body)).status_code == 200
    await drained(gw, count)


async def test_dashboard_renders_the_gateways_numbers(
    browser: str, start_emulator: StartEmulator, start_gateway: StartGateway, tmp_path: Path
) -> None:
    a = await start_emulator(models=["emulated-model"], token_delay_ms=1.0)
    b = await start_emulator(models=["emulated-model"], token_delay_ms=1.0)
    config = make_config({"engine-a": a.base_url, "engine-b": b.base_url})
    config["backends"][0]["pricing"] = {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}
    gw = await start_gateway(config)
    await traffic(gw, 24)
    data = (await gw.client.get("/v1/switchyard/dashboard")).json()

    dom = await asyncio.to_thread(chromium, gw.url + "/dashboard", "--dump-dom")
    page = parse(dom)
    assert 'data-loaded="true"' in dom, dom[:2000]
    assert page.root.get("data-page") == "fleet"
    assert page.first("requests") == "24"
    assert page.first("success_rate") == "100.0%"
    assert page.first("requests", "engine-a") == f"{data_requests(data, 'engine-a'):,}"
    assert page.first("requests", "engine-b") == f"{data_requests(data, 'engine-b'):,}"
    spend = data["fleet"]["summary"]["spend_usd"]
    assert spend > 0 and page.first("spend_usd") == f"${spend:.4f}"
    points = re.search(r'data-chart="ttft"[^>]*data-points="(\d+)"', dom) or re.search(
        r'data-points="(\d+)"[^>]*data-chart="ttft"', dom
    )
    assert points is not None and int(points.group(1)) >= 1  # streams drew TTFT points

    one = await asyncio.to_thread(chromium, gw.url + "/dashboard#/backend/engine-a", "--dump-dom")
    backend_page = parse(one)
    assert backend_page.root.get("data-page") == "backend"
    assert backend_page.root.get("data-backend") == "engine-a"
    assert backend_page.first("requests") == f"{data_requests(data, 'engine-a'):,}"

    shot = Path(os.environ.get(SCREENSHOT_DIR_ENV) or tmp_path) / "dashboard-fleet.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    await asyncio.to_thread(
        chromium, gw.url + "/dashboard", f"--screenshot={shot}", "--window-size=1400,1800"
    )
    assert shot.stat().st_size > 10_000


def data_requests(data: dict[str, object], name: str) -> int:
    backends = data["backends"]
    assert isinstance(backends, list)
    return int(next(b for b in backends if b["name"] == name)["summary"]["requests"])


async def test_a_backend_without_its_key_shows_a_badge(
    browser: str,
    start_emulator: StartEmulator,
    start_gateway: StartGateway,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SY_DASH_UNSET_KEY", raising=False)
    a = await start_emulator(models=["emulated-model"])
    config = make_config({"engine-a": a.base_url, "engine-b": a.base_url})
    config["backends"][1]["api_key_env"] = "SY_DASH_UNSET_KEY"
    gw = await start_gateway(config)
    dom = await asyncio.to_thread(chromium, gw.url + "/dashboard", "--dump-dom")
    assert 'data-loaded="true"' in dom, dom[:2000]
    badges = [(text, row) for metric, text, row in parse(dom).found if metric == "credentials"]
    assert badges == [("no key", "engine-b")]
    assert 'title="SY_DASH_UNSET_KEY is unset or empty"' in dom


async def test_the_cascades_card_shows_where_answers_came_from(
    browser: str, start_emulator: StartEmulator, start_gateway: StartGateway
) -> None:
    small = await start_emulator(models=["emulated-model"], faults={"loop_rate": 1.0})
    strong = await start_emulator(models=["emulated-model"])
    config = make_config({"small": small.base_url, "strong": strong.base_url})
    config["backends"][1]["pricing"] = {"input_usd_per_mtok": 3.0, "output_usd_per_mtok": 15.0}
    config["routes"] = [
        {"name": "cheap", "model": "emulated-model", "backends": ["small"]},
        {"name": "best", "model": "emulated-model", "backends": ["strong"]},
    ]
    config["cascades"] = [
        {
            "name": "auto",
            "tiers": ["cheap", "best"],
            "checks": ["loop"],
            "start": {"learned": False},
        }
    ]
    gw = await start_gateway(config)
    body = {"model": "auto", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 120}
    for _ in range(3):
        assert (await gw.client.post("/v1/chat/completions", json=body)).status_code == 200
    await drained(gw, 6)
    data = (await gw.client.get("/v1/switchyard/dashboard")).json()
    (cascade,) = data["cascades"]
    assert cascade["answers"] == 3 and cascade["answered_by"] == {"best": 3}
    assert cascade["checks"] == {"cheap/loop": 3}
    dom = await asyncio.to_thread(chromium, gw.url + "/dashboard", "--dump-dom")
    page = parse(dom)
    assert 'data-cascade="auto"' in dom
    assert page.first("cascade_answers") == "3"
    assert page.first("cascade_passing") == "100.0%"
    assert 'data-check="cheap/loop"' in dom
