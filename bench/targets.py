"""Starting what is measured: the emulated engine, Switchyard, and LiteLLM's proxy."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench.procs import Server, StartError, free_port

BENCH_DIR = Path(__file__).resolve().parent
REPO_DIR = BENCH_DIR.parent
MAIN_BIN = Path(sys.executable).parent
LITELLM_VENV = BENCH_DIR / ".venv-litellm"
# Pinned: litellm's PyPI account was hijacked in March 2026 (1.82.7 and 1.82.8 stole
# credentials; a 1.107.0 compromise is reported too), and releases after 1.108.7 need a
# `litellm-proxy` package that PyPI does not serve. Bump deliberately, never float.
LITELLM_REQUIREMENT = "litellm[proxy]==1.108.7"


@dataclass(frozen=True)
class Engine:
    """One emulated engine: non-streaming phases use the instant one, streaming the paced."""

    name: str
    model: str
    token_delay_ms: float


INSTANT = Engine("engine", "emulated-model", 0.0)
# With no delay the emulator writes a whole stream at once, so a gateway would relay one
# read per stream; a real engine writes each token as it comes. 1 ms apart, each SSE event
# is its own write, which is what the per-chunk CPU figure must be about.
PACED = Engine("engine-paced", "emulated-paced", 1.0)
ROUTES = {INSTANT.name: "default", PACED.name: "paced"}


def start_emulator(engine: Engine, workdir: Path, cpus: set[int] | None) -> tuple[Server, int]:
    port = free_port()
    argv = [str(MAIN_BIN / "switchyard"), "emulate", "--port", str(port), "--model", engine.model]
    # Per request and per chunk figures need the same answers every run: max_tokens long.
    argv += ["--token-delay-ms", f"{engine.token_delay_ms:g}", "--ignore-eos"]
    server = Server(engine.name, argv, workdir / f"{engine.name}.log", cpus=cpus)
    _ready_or_stopped(server, f"http://127.0.0.1:{port}/v1/models", timeout_s=30)
    return server, port


def switchyard_config(engine_ports: dict[str, int], port: int) -> dict[str, object]:
    engines = {e.name: e for e in (INSTANT, PACED)}
    return {
        "server": {"host": "127.0.0.1", "port": port},
        "health": {"probe_interval_s": 3600},
        "backends": [
            {
                "name": name,
                "kind": "openai-compatible",
                "base_url": f"http://127.0.0.1:{engine_port}/v1",
                "models": [engines[name].model],
                "max_concurrency": 1024,
            }
            for name, engine_port in engine_ports.items()
        ],
        "routes": [
            {"name": route, "model": engines[name].model, "backends": [name], "profile": "balanced"}
            for name, route in ROUTES.items()
        ],
        "profiles": [
            {
                "name": "balanced",
                "plugins": [
                    {"ref": "healthy-filter"},
                    {"ref": "least-load-scorer"},
                    {"ref": "max-score-picker"},
                ],
            }
        ],
    }


def start_switchyard(
    name: str, engine_ports: dict[str, int], workdir: Path, cpus: set[int] | None, log_level: str
) -> tuple[Server, int]:
    port = free_port()
    config = workdir / f"{name}.yaml"
    config.write_text(yaml.safe_dump(switchyard_config(engine_ports, port), sort_keys=False))
    argv = [str(MAIN_BIN / "switchyard"), "serve", "--config", str(config)]
    argv += ["--port", str(port), "--log-level", log_level]
    server = Server(name, argv, workdir / f"{name}.log", cpus=cpus)
    _ready_or_stopped(server, f"http://127.0.0.1:{port}/healthz", timeout_s=60)
    return server, port


def _litellm_site_packages() -> list[Path]:
    return sorted(LITELLM_VENV.glob("lib/python*/site-packages"))


def _unexpected_startup_hooks() -> list[str]:
    """`.pth` files run code at every interpreter start: 1.82.8's malware hid in one."""
    allowed = {"distutils-precedence.pth", "_virtualenv.pth"}
    return [
        str(pth)
        for site in _litellm_site_packages()
        for pth in site.glob("*.pth")
        if pth.name not in allowed and not pth.name.startswith("__editable__")
    ]


def ensure_litellm(log_path: Path) -> Path:
    """The `litellm` executable of the bench's own venv; installs it there when missing."""
    executable = LITELLM_VENV / "bin" / "litellm"
    if not executable.exists():
        python = LITELLM_VENV / "bin" / "python"
        with log_path.open("ab") as log:
            if not python.exists():
                subprocess.run([sys.executable, "-m", "venv", str(LITELLM_VENV)], check=True)
            pip = [str(python), "-m", "pip", "install", "-q", LITELLM_REQUIREMENT]
            result = subprocess.run(pip, stdout=log, stderr=subprocess.STDOUT, timeout=1800)
        if result.returncode != 0 or not executable.exists():
            raise StartError(f"pip install {LITELLM_REQUIREMENT} failed; see {log_path}")
    hooks = _unexpected_startup_hooks()
    if hooks:
        raise StartError(f"refusing to run litellm: unexpected start-up hooks {hooks}")
    return executable


def litellm_version() -> str | None:
    for site in _litellm_site_packages():
        for info in site.glob("litellm-*.dist-info"):
            return info.name.removeprefix("litellm-").removesuffix(".dist-info")
    return None


def litellm_env() -> dict[str, str]:
    """An environment that keeps LiteLLM local: no cost-map download, no telemetry, no DB."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "DIRECT_URL"}}
    env.update(
        LITELLM_LOCAL_MODEL_COST_MAP="True",
        LITELLM_TELEMETRY="False",
        LITELLM_LOG="ERROR",
        LITELLM_MODE="PRODUCTION",
        DISABLE_SCHEMA_UPDATE="True",
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
        NO_PROXY="127.0.0.1,localhost",
    )
    env.pop("OPENAI_API_KEY", None)
    return env


def litellm_config(engine_ports: dict[str, int]) -> dict[str, object]:
    engines = {e.name: e for e in (INSTANT, PACED)}
    return {
        "model_list": [
            {
                "model_name": ROUTES[name],
                "litellm_params": {
                    "model": f"openai/{engines[name].model}",
                    "api_base": f"http://127.0.0.1:{engine_port}/v1",
                    "api_key": "none",
                },
            }
            for name, engine_port in engine_ports.items()
        ],
        "litellm_settings": {"telemetry": False, "set_verbose": False, "json_logs": False},
        # Switchyard runs without client auth here, so LiteLLM does too (loopback only).
        "general_settings": {
            "disable_spend_logs": True,
            "dangerously_permit_weak_or_unset_master_key": True,
        },
    }


def start_litellm(
    engine_ports: dict[str, int], workdir: Path, cpus: set[int] | None
) -> tuple[Server, int]:
    executable = ensure_litellm(workdir / "litellm-install.log")
    port = free_port()
    config = workdir / "litellm.yaml"
    config.write_text(yaml.safe_dump(litellm_config(engine_ports), sort_keys=False))
    argv = [str(executable), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)]
    server = Server("litellm", argv, workdir / "litellm.log", env=litellm_env(), cpus=cpus)
    _ready_or_stopped(server, f"http://127.0.0.1:{port}/health/liveliness", timeout_s=180)
    return server, port


def _ready_or_stopped(server: Server, url: str, timeout_s: float) -> None:
    try:
        server.wait_ready(url, timeout_s)
    except BaseException:  # Ctrl-C included: the caller does not know this PID yet
        server.stop()
        raise
