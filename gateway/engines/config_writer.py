"""A gateway config for the replicas just started: one `llama-cpp` backend each, and three
routes over all of them (`default` cache-aware, `least-load`, `round-robin`).

The file is loaded with the gateway's own loader before it takes its name, so a config the
gateway would refuse is never written.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from gateway.config import default_profile
from gateway.engines.state import Replica
from gateway.errors import ConfigError

if TYPE_CHECKING:
    from gateway.config.root import Config

DEFAULT_CONFIG_NAME = "switchyard-engines.yaml"
PREFILL_TOKENS_PER_S = 150.0
"""Prior for uncached prefill: SmolLM2-135M on one CPU thread; learned from traffic after."""
TPOT_MS = 30.0
"""Prior for time per output token, the same way."""
PROBE_INTERVAL_S = 900.0
"""A probe cycle per replica every 15 minutes: the needle's cold prefill of most of the window
takes a CPU replica's slot for seconds, so it runs less often than the default 5 minutes."""
NEEDLE_SHARE = 15 / 16
"""`needle_tokens` as a share of the window. The prober counts 4 characters a token, and its
filler words are about one token each, so the needle takes ~0.6 of the window in real
tokens (SmolLM2: `needle_tokens` 2,000 is ~1,210 tokens; docs/quality.md): room to spare
for a tokenizer that splits the filler more finely."""
FIRST_TOKEN_S = 120.0
"""A CPU prefill of a whole window, behind another request in the one slot, is slow."""

HEADER = """\
# Written by `switchyard engines start` for the llama.cpp replicas it started here.
# Serve it: switchyard serve --config {name}
# Stop the replicas: switchyard engines stop
# Routes: default (cache-aware), least-load, round-robin. Quality probes run every
# {interval} min per replica: the canary and a needle sized to the window (it takes the one
# slot for a few seconds of CPU); no tool-call probe, as a small model calls no tools.
"""

# The built-in cache-aware profile (the embedded example's), then two to compare it with.
POLICIES: list[dict[str, Any]] = default_profile.POLICIES
PROFILES: list[dict[str, Any]] = [
    default_profile.PROFILE,
    # No capacity filter in these two: a request beyond the slots waits in the engine's
    # queue, as llama.cpp queues it, rather than being refused with a 429 here.
    {
        "name": "least-load",
        "plugins": [
            {"ref": "healthy-filter"},
            {"ref": "placement-filter"},
            {"ref": "context-window-filter"},
            {"ref": "least-load-scorer"},
            {"ref": "max-score-picker"},
        ],
    },
    {
        "name": "rotate",
        "plugins": [
            {"ref": "healthy-filter"},
            {"ref": "placement-filter"},
            {"ref": "context-window-filter"},
            {"ref": "round-robin-scorer"},
            {"ref": "max-score-picker"},
        ],
    },
]
ROUTES = (("default", "cache-aware"), ("least-load", "least-load"), ("round-robin", "rotate"))


def backend_entry(replica: Replica, model_alias: str) -> dict[str, Any]:
    return {
        "name": replica.name,
        "kind": "llama-cpp",
        "base_url": replica.base_url,
        "models": [model_alias],
        "context_window_tokens": replica.n_ctx,
        "max_concurrency": replica.parallel,
        # The slots' windows, then the prompts its host-memory cache keeps.
        "cache": {
            "capacity_tokens": replica.held_tokens,
            "prefill_tokens_per_s": PREFILL_TOKENS_PER_S,
            "tpot_ms": TPOT_MS,
        },
        "metrics": {},
        "probes": probe_settings(replica),
        "timeouts": {"first_token_s": FIRST_TOKEN_S},
    }


def probe_settings(replica: Replica) -> dict[str, Any]:
    """The canary and a needle that fits one slot's window; no tool-call probe."""
    return {
        "interval_s": PROBE_INTERVAL_S,
        "tool_call": False,
        "needle_tokens": max(64, int(replica.n_ctx * NEEDLE_SHARE)),
    }


def engines_config(
    replicas: Sequence[Replica], model_alias: str, *, port: int = 8080
) -> dict[str, Any]:
    """The config as data: backends, the three routes, their policies and profiles."""
    names = [r.name for r in replicas]
    routes = [
        {"name": name, "model": model_alias, "backends": list(names), "profile": profile}
        for name, profile in ROUTES
    ]
    return {
        "server": {"host": "127.0.0.1", "port": port},
        "backends": [backend_entry(r, model_alias) for r in replicas],
        "routes": routes,
        "policies": POLICIES,
        "profiles": PROFILES,
    }


def render_config(data: dict[str, Any], name: str) -> str:
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=100)
    return HEADER.format(name=name, interval=round(PROBE_INTERVAL_S / 60)) + body


def write_config(
    path: Path, replicas: Sequence[Replica], model_alias: str, *, port: int = 8080
) -> Config:
    """Write the config to `path` once the gateway's loader accepts it; return what it
    loaded. A refused config raises `ConfigError` and leaves `path` as it was."""
    from gateway.config.root import load_config  # not for `switchyard --help`

    text = render_config(engines_config(replicas, model_alias, port=port), path.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".part")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as sink:
            sink.write(text)
        try:
            config = load_config(partial)
        except ConfigError as exc:  # named after the file the user asked for
            raise ConfigError(str(path), exc.problems) from None
        os.replace(partial, path)
    finally:
        Path(partial).unlink(missing_ok=True)
    return config
