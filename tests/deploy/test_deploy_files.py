"""The deployment files agree with each other and with the gateway (no Docker, no network)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

from gateway.cli import build_parser
from gateway.config.root import Config, load_config
from gateway.telemetry.metrics import METRIC_NAMES, GatewayMetrics

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
USER_SUPPLIED = {"./models"}  # GGUF files for the optional llama.cpp engine, not in the repo
ENGINES = {"vllm": "gpu", "llamacpp": "cpu"}


def _yaml(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    compose = _yaml(ROOT / "docker-compose.yml")
    assert "version" not in compose  # obsolete in the compose spec
    result: dict[str, Any] = compose["services"]
    return result


@pytest.fixture(scope="module")
def config() -> Config:
    return load_config(DEPLOY / "switchyard" / "config.yaml")


def _dockerfile() -> dict[str, str]:
    """The last argument of each instruction (continuation lines joined)."""
    text = (ROOT / "Dockerfile").read_text(encoding="utf-8").replace("\\\n", " ")
    lines = [line.strip() for line in text.splitlines()]
    return dict(line.split(None, 1) for line in lines if line and not line.startswith("#"))


def _mounts(service: dict[str, Any]) -> dict[str, str]:
    """Bind mounts of a service: container path -> host path."""
    pairs = (str(v).split(":")[:2] for v in service.get("volumes", []))
    return {target: source for source, target in pairs if source.startswith(".")}


def _arg(command: list[str], flag: str) -> str:
    return command[command.index(flag) + 1]


def test_compose_services_and_profiles(services: dict[str, Any]) -> None:
    assert {"gateway", "redis", "postgres", "prometheus", "grafana"} <= services.keys()
    for name, profile in ENGINES.items():
        assert services[name]["profiles"] == [profile]
    for name in services.keys() - ENGINES.keys():
        assert "profiles" not in services[name], f"{name} must start by default"
    assert services["gateway"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "redis" in services["gateway"]["depends_on"]


def test_host_paths_exist_and_ports_are_local(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for source in _mounts(service).values():
            if source not in USER_SUPPLIED:
                assert (ROOT / source).exists(), f"{name} mounts missing {source}"
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} publicly"
    assert (ROOT / services["gateway"]["build"] / "Dockerfile").is_file()


def test_dockerfile_runs_the_mounted_config(services: dict[str, Any]) -> None:
    instructions = _dockerfile()
    assert instructions["FROM"].startswith("python:3.11-slim")
    assert instructions["USER"].split(":")[0] not in {"root", "0"}
    assert json.loads(instructions["ENTRYPOINT"]) == ["switchyard"]
    cmd: list[str] = json.loads(instructions["CMD"])
    config_path = _arg(cmd, "--config")
    assert config_path in _mounts(services["gateway"])
    port = _arg(cmd, "--port")
    assert instructions["EXPOSE"] == port
    assert [p.rsplit(":", 1)[1] for p in services["gateway"]["ports"]] == [port]
    assert f"127.0.0.1:{port}/healthz" in instructions["HEALTHCHECK"]
    build_parser().parse_args(cmd)  # every flag of the CMD exists


def test_entrypoint_is_a_console_script() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "switchyard" in project["project"]["scripts"]


def test_gateway_config_points_at_compose_services(
    services: dict[str, Any], config: Config
) -> None:
    assert config.server.host == "0.0.0.0"
    assert config.server.api_keys_env is None  # else the stack needs the keys set
    urls = [b.base_url for b in config.backends]
    urls += [config.state.redis_url, config.store.url]
    for url in urls:
        assert url is not None and urlsplit(url).hostname in services, url
    assert config.state.backend == "redis"
    env = services["gateway"]["environment"]
    assert env["SWITCHYARD_DATABASE_URL"] == config.store.url
    assert any(b.pricing is not None for b in config.backends)
    # The engines serve the model under the name the config routes to.
    served = {
        "vllm": _arg(services["vllm"]["command"], "--served-model-name"),
        "llamacpp": _arg(services["llamacpp"]["command"], "--alias"),
    }
    for backend in config.backends:
        assert urlsplit(backend.base_url or "").hostname in ENGINES
        assert served[urlsplit(backend.base_url or "").hostname or ""] in backend.models


def test_prometheus_scrapes_the_gateway_and_engines(config: Config) -> None:
    prometheus = _yaml(DEPLOY / "prometheus" / "prometheus.yml")
    jobs = {job["job_name"]: job for job in prometheus["scrape_configs"]}
    gateway = [t for c in jobs["switchyard"]["static_configs"] for t in c["targets"]]
    port = _arg(json.loads(_dockerfile()["CMD"]), "--port")
    assert gateway == [f"gateway:{port}"]
    assert jobs["switchyard"]["scrape_interval"] == "5s"
    engines = {t for c in jobs["engines"]["static_configs"] for t in c["targets"]}
    assert engines == {urlsplit(b.base_url or "").netloc for b in config.backends}


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (DEPLOY / "grafana" / "dashboards" / "switchyard.json").read_text(encoding="utf-8")
    )
    return data


def _panels(panels: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for p in panels for q in [p, *_panels(p.get("panels", []))]]


def test_grafana_provisioning_matches_compose(
    services: dict[str, Any], dashboard: dict[str, Any]
) -> None:
    provisioning = DEPLOY / "grafana" / "provisioning"
    (source,) = _yaml(provisioning / "datasources" / "prometheus.yml")["datasources"]
    assert urlsplit(source["url"]).hostname in services
    (provider,) = _yaml(provisioning / "dashboards" / "switchyard.yml")["providers"]
    mounts = _mounts(services["grafana"])
    assert mounts[provider["options"]["path"]] == "./deploy/grafana/dashboards"
    assert mounts["/etc/grafana/provisioning"] == "./deploy/grafana/provisioning"
    sources = [p.get("datasource") for p in _panels(dashboard["panels"]) if p["type"] != "row"]
    sources += [t["datasource"] for p in _panels(dashboard["panels"]) for t in p.get("targets", [])]
    sources += [v["datasource"] for v in dashboard["templating"]["list"]]
    assert {s["uid"] for s in sources} == {source["uid"]}


def _metric_labels() -> dict[str, set[str]]:
    """Each exported family's labels, read off the collectors the gateway registers."""
    labels: dict[str, set[str]] = {}
    for metric in vars(GatewayMetrics()).values():
        if isinstance(metric, MetricWrapperBase):
            kind, name = metric._type, metric._name
            extra = {"le"} if kind == "histogram" else set()
            labels[name + ("_total" if kind == "counter" else "")] = {*metric._labelnames, *extra}
    assert set(labels) == set(METRIC_NAMES)
    return labels


METRIC = re.compile(r"(switchyard_[a-z_]+)(\{[^}]*\})?")
BY = re.compile(r"\bby\s*\(([^)]*)\)")


def _family(name: str, labels: dict[str, set[str]]) -> str:
    if name not in labels:
        base = re.sub(r"_(bucket|sum|count)$", "", name)
        assert "le" in labels.get(base, set()), f"unknown metric {name}"
        return base
    return name


def test_dashboard_queries_use_exported_metrics_and_labels(dashboard: dict[str, Any]) -> None:
    assert dashboard["uid"] == "switchyard" and dashboard["schemaVersion"] == 39
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert {"backend", "route"} <= variables.keys()
    panels = _panels(dashboard["panels"])
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids))
    assert any(p.get("repeat") == "backend" for p in panels)
    labels = _metric_labels()
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    exprs += [v["definition"] for v in variables.values()]
    seen: set[str] = set()
    for expr in exprs:
        families = [(_family(m[1], labels), m[2] or "") for m in METRIC.finditer(expr)]
        assert families, expr
        for family, selector in families:
            seen.add(family)
            used = set(re.findall(r"(\w+)\s*(?:=~|!~|!=|=)", selector))
            assert used <= labels[family], f"{family} has no {used - labels[family]}: {expr}"
        for group in BY.findall(expr):
            used = {label.strip() for label in group.split(",") if label.strip()}
            for family, _ in families:
                assert used <= labels[family], f"{family} has no {used}: {expr}"
    assert len(seen) >= 15  # every view is there, not only a few metrics
