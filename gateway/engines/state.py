"""The running replicas, as described to callers and kept on disk between `switchyard
engines start` and `stop`: `STATE_DIR/engines.json` (names, PIDs, ports, model, start time).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gateway.engines.errors import EngineError

HOST = "127.0.0.1"
DEFAULT_STATE_DIR = Path(".switchyard") / "engines"
STATE_FILE = "engines.json"


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Replica(_Frozen):
    """One llama.cpp server process on loopback."""

    name: str = Field(description="Its backend name in the written gateway config.")
    port: int = Field(ge=1, le=65535)
    pid: int = Field(ge=1)
    n_ctx: int = Field(ge=1, description="Tokens per sequence (one slot's window).")
    parallel: int = Field(1, ge=1, description="Slots: sequences it decodes at once.")
    host_cache_tokens: int = Field(
        0, ge=0, description="Prompt tokens its host-memory cache holds (0: none, or unknown)."
    )
    log_path: Path = Field(description="Its stdout and stderr, llama.cpp's log included.")

    @property
    def held_tokens(self) -> int:
        """Prompt tokens it keeps for reuse: its slots' windows, then its host-memory cache."""
        return self.n_ctx * self.parallel + self.host_cache_tokens

    @property
    def origin(self) -> str:
        """`http://127.0.0.1:PORT`: where `/health`, `/metrics`, `/slots`, `/props` are."""
        return f"http://{HOST}:{self.port}"

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:PORT/v1`: the OpenAI base, as a backend's `base_url`."""
        return self.origin + "/v1"


class EngineState(_Frozen):
    """What one `switchyard engines start` launched."""

    model_path: Path
    model_alias: str = Field(description="The model id the replicas answer to.")
    started_at: str = Field(description="ISO 8601, UTC.")
    replicas: tuple[Replica, ...]
    config_path: Path | None = Field(None, description="The gateway config written for them.")


def state_path(state_dir: Path) -> Path:
    return state_dir / STATE_FILE


def write_state(state_dir: Path, state: EngineState) -> Path:
    """Write atomically: a reader sees the old file or the new one, never half of one."""
    state_dir.mkdir(parents=True, exist_ok=True)
    target = state_path(state_dir)
    handle, partial = tempfile.mkstemp(dir=state_dir, prefix=STATE_FILE, suffix=".part")
    with os.fdopen(handle, "w", encoding="utf-8") as sink:
        sink.write(state.model_dump_json(indent=2) + "\n")
    os.replace(partial, target)
    return target


def read_state(state_dir: Path) -> EngineState | None:
    """The state file's content; None when there is none."""
    path = state_path(state_dir)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    try:
        return EngineState.model_validate_json(text)
    except ValidationError as exc:
        raise EngineError(f"{path}: not a state file this version understands ({exc})") from None


def remove_state(state_dir: Path) -> None:
    state_path(state_dir).unlink(missing_ok=True)
