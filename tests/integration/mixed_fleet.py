"""One route over three wire formats, for the tests here: an OpenAI-format engine, one
reached as `kind: anthropic` and one as `kind: gemini`, each an emulator on loopback
serving its own model id and holding its own key, all behind the public name `assistant`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from emulator.server import EmulatorServer
from tests.conftest import StartEmulator

ROUTE = "assistant"
HEADER = "x-switchyard-require-tags"
CLIENT_KEY = "client-key-1"
CLIENT_KEYS_ENV = "MIXED_FLEET_CLIENT_KEYS"


@dataclass(frozen=True)
class Member:
    """One backend of the route: its kind, the id it serves, its tags (the first its own,
    to force it) and the key its engine requires."""

    name: str
    kind: str
    model: str
    tags: tuple[str, ...]
    api_root: str
    context_window_tokens: int
    key: str | None = None

    @property
    def tag(self) -> str:
        return self.tags[0]

    @property
    def key_env(self) -> str:
        return f"MIXED_FLEET_{self.name.upper()}_KEY"


CLOUD = "cloud"
"""The tag both clouds carry: a request requiring it may fail over from one to the other."""
LOCAL = Member("local", "openai-compatible", "qwen3-8b-q4_k_m", ("local",), "/v1", 8192)
CLAUDE = Member(
    "claude", "anthropic", "claude-sonnet-4-5", ("anthropic", CLOUD), "/v1", 200_000, "ak-claude"
)
GEMINI = Member(
    "gemini", "gemini", "gemini-2.5-flash", ("google", CLOUD), "/v1beta", 1_048_576, "gk-gemini"
)
MEMBERS = (LOCAL, CLAUDE, GEMINI)
PROFILE: list[dict[str, Any]] = [
    {"ref": "model-match-filter"},
    {"ref": "healthy-filter"},
    {"ref": "placement-filter"},
    {"ref": "context-window-filter"},
    {"ref": "least-load-scorer", "weight": 1.0},
    {"ref": "round-robin-scorer", "weight": 0.5},
    {"ref": "max-score-picker"},
]


@dataclass(frozen=True)
class Fleet:
    """The started engines by member name, and the gateway config over them."""

    engines: dict[str, EmulatorServer]
    config: dict[str, Any]


def backend_entry(member: Member, base_url: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": member.name,
        "kind": member.kind,
        "base_url": base_url,
        "models": [member.model],
        "tags": list(member.tags),
        "context_window_tokens": member.context_window_tokens,
    }
    if member.key is not None:
        entry["api_key_env"] = member.key_env
    return entry


def mixed_config(base_urls: dict[str, str], **sections: Any) -> dict[str, Any]:
    """Route `assistant` over the three members, each asked for its own model id."""
    config: dict[str, Any] = {
        "backends": [backend_entry(m, base_urls[m.name]) for m in MEMBERS],
        "routes": [
            {
                "name": ROUTE,
                "model": LOCAL.model,
                "backends": [{"backend": m.name, "model": m.model} for m in MEMBERS],
                "profile": "mixed",
            }
        ],
        "profiles": [{"name": "mixed", "plugins": PROFILE}],
        # Failures must reach the dispatcher (failover), not a prober between requests.
        "health": {"active_probes": False},
    }
    config.update(sections)
    return config


async def start_fleet(
    start_emulator: StartEmulator,
    monkeypatch: pytest.MonkeyPatch,
    *,
    gateway_keys: dict[str, str] | None = None,
    token_delay_ms: float = 0.0,
    engine_options: dict[str, dict[str, Any]] | None = None,
    **sections: Any,
) -> Fleet:
    """Three engines, each requiring its member's key (with `engine_options` by member
    name), and the config over them. The gateway holds each member's key unless
    `gateway_keys` gives it another."""
    engines: dict[str, EmulatorServer] = {}
    for member in MEMBERS:
        engines[member.name] = await start_emulator(
            models=[member.model],
            api_key=member.key,
            token_delay_ms=token_delay_ms,
            **(engine_options or {}).get(member.name, {}),
        )
        held = (gateway_keys or {}).get(member.name, member.key)
        if held is not None:
            monkeypatch.setenv(member.key_env, held)
    urls = {m.name: engines[m.name].origin + m.api_root for m in MEMBERS}
    return Fleet(engines, mixed_config(urls, **sections))


def with_client_keys(config: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The config with client keys required (`CLIENT_KEY` among them)."""
    monkeypatch.setenv(CLIENT_KEYS_ENV, f"{CLIENT_KEY},client-key-2")
    return {**config, "server": {"api_keys_env": CLIENT_KEYS_ENV}}
