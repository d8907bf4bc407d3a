"""`switchyard check` reports what `serve` needs of its environment, every problem in one
run: errors where serving cannot work (the same words `serve` refuses with, found by the
same code), warnings per backend whose key is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main
from tests.conftest import make_config

UNSET = (
    "SY_PF_CLIENT_KEYS",
    "SY_PF_ADMIN_KEYS",
    "SY_PF_METRICS_TOKEN",
    "SY_PF_SECRET",
    "SY_PF_OPENAI_KEY",
    "SY_PF_ANTHROPIC_KEY",
    "SWITCHYARD_DATABASE_URL",
)
OPENAI_KEY = "sk-pf-openai-5e1b7c0d"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in UNSET:
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, config: dict[str, Any]) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return str(path)


def clouds(tmp_path: Path, **sections: Any) -> dict[str, Any]:
    """Four backends: an engine needing no key, OpenAI and Anthropic naming their key
    variables, and OpenAI again naming none."""
    config = make_config(
        {
            "engine": "http://127.0.0.1:9/v1",
            "openai": "https://api.openai.com/v1",
            "anthropic": "https://api.anthropic.com/v1",
            "openai-bare": "https://api.openai.com/v1",
        },
        **sections,
    )
    kinds = {"openai": "openai", "anthropic": "anthropic", "openai-bare": "openai"}
    keys = {"openai": "SY_PF_OPENAI_KEY", "anthropic": "SY_PF_ANTHROPIC_KEY"}
    for backend in config["backends"]:
        backend["kind"] = kinds.get(backend["name"], "vllm")
        if backend["name"] in keys:
            backend["api_key_env"] = keys[backend["name"]]
    return config


WARNINGS = [
    "warning: backends.1.api_key_env: SY_PF_OPENAI_KEY is unset or empty; backend openai "
    "starts without a key and its provider will likely refuse its requests (HTTP 401)",
    "warning: backends.2.api_key_env: SY_PF_ANTHROPIC_KEY is unset or empty; backend "
    "anthropic starts without a key and its provider will likely refuse its requests (HTTP 401)",
    "warning: backends.3: kind openai takes a key and api_key_env names none; backend "
    "openai-bare starts without a key and its provider will likely refuse its requests "
    "(HTTP 401)",
]
ERRORS = [
    "config error in environment:",
    "  server.api_keys_env: SY_PF_CLIENT_KEYS is unset or empty",
    "  server.admin_keys_env: SY_PF_ADMIN_KEYS is unset or empty",
    "  server.metrics_token_env: SY_PF_METRICS_TOKEN is unset or empty",
    "  keys.secret_env: $SY_PF_SECRET must hold a secret of at least 16 characters "
    "(e.g. `openssl rand -hex 32`)",
]


def everything_unset(tmp_path: Path) -> dict[str, Any]:
    server = {
        "api_keys_env": "SY_PF_CLIENT_KEYS",
        "admin_keys_env": "SY_PF_ADMIN_KEYS",
        "metrics_token_env": "SY_PF_METRICS_TOKEN",
    }
    keys = {"enabled": True, "secret_env": "SY_PF_SECRET"}
    store = {"url": f"sqlite+aiosqlite:///{tmp_path / 'pf.db'}"}
    return clouds(tmp_path, server=server, keys=keys, store=store)


def test_check_reports_every_missing_variable_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--config", write(tmp_path, everything_unset(tmp_path))]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == WARNINGS + ERRORS


def test_check_passes_once_the_environment_holds_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in UNSET[:3]:
        monkeypatch.setenv(name, f"value-of-{name.lower()}")
    monkeypatch.setenv("SY_PF_SECRET", "s" * 32)
    monkeypatch.setenv("SY_PF_OPENAI_KEY", OPENAI_KEY)
    monkeypatch.setenv("SY_PF_ANTHROPIC_KEY", "  ")  # blank counts as unset
    path = write(tmp_path, everything_unset(tmp_path))
    assert main(["check", "--config", path]) == 0
    captured = capsys.readouterr()
    assert captured.out == "ok: 4 backends, 1 routes, 1 profiles\n"
    assert captured.err.splitlines() == WARNINGS[1:]
    assert main(["check", "--config", path, "--strict"]) == 1
    assert OPENAI_KEY not in capsys.readouterr().err


def test_check_file_only_leaves_the_environment_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, everything_unset(tmp_path))
    assert main(["check", "--config", path, "--file-only", "--strict"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("sections", "host", "problem"),
    [
        (
            {"server": {"admin_keys_env": "SY_PF_ADMIN_KEYS"}},
            None,
            "server.admin_keys_env: SY_PF_ADMIN_KEYS is unset or empty",
        ),
        (
            {"keys": {"enabled": True, "secret_env": "SY_PF_SECRET"}},
            None,
            "keys.enabled: needs store.url (or the env var)",
        ),
        (
            {},
            "0.0.0.0",
            "server.host: 0.0.0.0 is not a loopback address and no client keys are configured; "
            "set server.api_keys_env or keys.enabled, or server.allow_unauthenticated: true",
        ),
    ],
    ids=["admin-keys", "keys-without-store", "public-address"],
)
def test_check_fails_where_serve_would_and_says_the_same(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sections: dict[str, Any],
    host: str | None,
    problem: str,
) -> None:
    monkeypatch.setenv("SY_PF_SECRET", "s" * 32)
    path = write(tmp_path, make_config({"a": "http://127.0.0.1:9/v1"}, **sections))
    where = ["--host", host] if host is not None else []
    assert main(["check", "--config", path, *where]) == 2
    checked = capsys.readouterr().err
    assert f"  {problem}\n" in checked
    assert main(["serve", "--config", path, "--port", "0", *where]) == 2
    assert capsys.readouterr().err == checked


def test_serve_prints_the_warnings_under_its_banner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[object] = []
    monkeypatch.setattr("gateway.http.server.run", lambda app, options: served.append(app))
    assert main(["serve", "--config", write(tmp_path, clouds(tmp_path)), "--port", "0"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert len(served) == 1, "serve went on to start the app"
    assert lines[0].startswith("switchyard serving http://127.0.0.1:0/v1")
    assert lines[-3:] == WARNINGS


def test_check_warns_that_the_demo_stays_off_where_clients_need_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from gateway.cli import embedded_config_path

    config = yaml.safe_load(embedded_config_path().read_text())
    config["server"]["api_keys_env"] = "SY_PF_CLIENT_KEYS"
    monkeypatch.setenv("SY_PF_CLIENT_KEYS", "client-key-1")
    assert main(["check", "--config", write(tmp_path, config)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: demo.traffic_rps: no demo traffic, because clients need a key here "
        "(keys.enabled or server.api_keys_env) and the demo sends none; remove the demo section"
    ]


def test_check_warns_of_a_base_url_without_its_providers_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SY_PF_ANTHROPIC_KEY", "sk-ant-pf")
    config = make_config(
        {
            "engine": "http://127.0.0.1:9",  # llama-server serves / and /v1 alike: no warning
            "claude": "http://127.0.0.1:33589",  # an emulator: /messages is a 404 there
            "claude-v1": "http://127.0.0.1:33589/v1",
            "groq": "https://api.groq.com/",
            "proxied": "https://gateway.example/anthropic",  # a path of its own: trusted
        }
    )
    kinds = {"engine": "llama-cpp", "claude": "anthropic", "claude-v1": "anthropic"}
    for backend in config["backends"]:
        backend["kind"] = kinds.get(backend["name"], "anthropic")
    groq = config["backends"][3]
    groq["kind"], groq["preset"] = "openai-compatible", "groq"
    for backend in config["backends"][1:]:
        backend["api_key_env"] = "SY_PF_ANTHROPIC_KEY"
    assert main(["check", "--config", write(tmp_path, config)]) == 0
    assert capsys.readouterr().err.splitlines() == [
        "warning: backends.1.base_url: has no path, but kind anthropic's API is under /v1 "
        "(https://api.anthropic.com/v1); backend claude's requests will likely get HTTP 404: "
        "end its base_url with /v1",
        "warning: backends.3.base_url: has no path, but preset groq's API is under /openai/v1 "
        "(https://api.groq.com/openai/v1); backend groq's requests will likely get HTTP 404: "
        "end its base_url with /openai/v1",
    ]
