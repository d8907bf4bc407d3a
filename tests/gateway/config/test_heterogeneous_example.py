"""The worked heterogeneous config of docs/providers.md: the file it names validates, the
page shows that file's backends and routes, and its keyless variant is the embedded
default's."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import embedded_config_path, main
from gateway.config.root import load_config

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples" / "heterogeneous.yaml"
PAGE = REPO / "docs" / "providers.md"
SECTION = "## A route over a local engine and two clouds"
YAML_BLOCK = re.compile(r"```yaml\n(.*?)```", re.DOTALL)


def section_blocks() -> list[Any]:
    """The YAML blocks of the page's worked-config section, parsed."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.index("\n## ", start + len(SECTION))
    return [yaml.safe_load(block) for block in YAML_BLOCK.findall(text[start:end])]


def test_the_example_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--config", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == "ok: 3 backends, 1 routes, 1 profiles\n"
    config = load_config(EXAMPLE)
    kinds = {b.name: b.kind for b in config.backends}
    assert kinds == {"local-qwen": "vllm", "claude": "anthropic", "gemini": "gemini"}
    (route,) = config.routes
    assert dict(route.upstream_models) == {
        "local-qwen": "Qwen/Qwen3-32B",
        "claude": "claude-sonnet-4-5",
        "gemini": "gemini-2.5-flash",
    }


def test_the_page_shows_the_examples_backends_and_routes() -> None:
    shown = section_blocks()[0]
    example = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert shown == {"backends": example["backends"], "routes": example["routes"]}


def test_the_pages_keyless_cloud_is_the_embedded_defaults() -> None:
    """The abridged entry shown is the embedded default's, key for key."""
    (shown,) = section_blocks()[-1]
    embedded = yaml.safe_load(embedded_config_path().read_text(encoding="utf-8"))
    bundled = next(b for b in embedded["backends"] if b["name"] == shown["name"])
    for key, value in shown.items():
        if key == "emulator":
            assert value.items() <= bundled["emulator"].items()
        else:
            assert bundled[key] == value, key
    assert "base_url" not in bundled
