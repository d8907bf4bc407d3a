"""`switchyard check` names what each discovering entry becomes (no lookup); `explain`
looks each up once, as `serve` starts, and routes over what it found."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gateway.cli import main
from tests.gateway.discovery.dns_server import Zone


def write_config(tmp_path: Path, nameserver: str) -> Path:
    config = {
        "backends": [
            {
                "name": "vllm",
                "kind": "vllm",
                "models": ["m"],
                "discover": {"dns": "vllm.test", "nameservers": [nameserver]},
            }
        ],
        "routes": [{"name": "m", "backends": ["vllm"]}],
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_check_says_what_an_entry_discovers(
    tmp_path: Path, nameserver: str, zone: Zone, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", "--file-only", "--config", str(write_config(tmp_path, nameserver))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "ok: 1 backends, 1 routes, 1 profiles",
        "backends.0 (vllm) discovers: A+AAAA records of vllm.test every 10 s, at most 64 "
        "backends, each vllm@<address>:8000 at http://<address>:8000/v1",
    ]
    assert zone.queries == 0, "check looks nothing up"


def test_explain_routes_over_the_addresses_found_now(
    tmp_path: Path, nameserver: str, zone: Zone, capsys: pytest.CaptureFixture[str]
) -> None:
    zone.set_a("vllm.test", "10.0.0.2", "10.0.0.1")
    request = tmp_path / "request.json"
    request.write_text(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}))
    config = write_config(tmp_path, nameserver)
    assert main(["explain", "--config", str(config), str(request)]) == 0
    result = json.loads(capsys.readouterr().out)
    (row,) = result["discovery"]
    assert row["backends"] == ["vllm@10.0.0.1:8000", "vllm@10.0.0.2:8000"]
    assert result["chosen"] in row["backends"]
