"""A backend's key as the gateway can tell before any request: its variable set, its
variable unset or blank, or no variable named where its kind takes a key.

`switchyard check` and `serve` warn of each problem (a backend without its key still
starts; the others serve), and `GET /v1/switchyard/backends` and the dashboard show each
backend's. Only the variable's name is ever shown, never what it holds.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from providers.presets import PRESETS
from providers.settings import KEYED_KINDS

if TYPE_CHECKING:
    from gateway.config.backends import BackendConfig

CredentialsState = Literal["set", "missing", "unnamed", "none"]
"""`set`: `api_key_env` holds a key. `missing`: it names a variable that is unset or
blank. `unnamed`: the backend's kind takes a key and `api_key_env` names none. `none`: it
needs none (an engine without `api_key_env`; an emulator, whatever it names)."""


@dataclass(frozen=True, slots=True)
class BackendCredentials:
    """Where a backend's key comes from and whether it is there; read once, at start."""

    api_key_env: str | None
    state: CredentialsState
    problem: str | None = None
    """What is wrong, in words naming the variable (`OPENAI_API_KEY is unset or empty`)."""

    def describe(self) -> dict[str, object]:
        """The `credentials` of a backend's row in `GET /v1/switchyard/backends`."""
        return {"api_key_env": self.api_key_env, "state": self.state, "problem": self.problem}


def backend_credentials(backend: BackendConfig) -> BackendCredentials:
    """The backend's key as the environment holds it now (its value is not kept)."""
    env = backend.api_key_env
    if backend.emulated:
        return BackendCredentials(env, "none")
    if env:
        if backend.api_key() is not None:
            return BackendCredentials(env, "set")
        return BackendCredentials(env, "missing", f"{env} is unset or empty")
    if takes_key(backend):
        return BackendCredentials(
            None, "unnamed", f"kind {backend.kind} takes a key and api_key_env names none"
        )
    return BackendCredentials(None, "none")


def takes_key(backend: BackendConfig) -> bool:
    """Whether the service behind `backend` (no emulator) expects a key: a cloud kind, or
    an OpenAI-compatible preset that sends one as a bearer token."""
    if backend.kind in KEYED_KINDS:
        return True
    preset = backend.preset_name
    return preset is not None and PRESETS[preset].auth == "bearer"


def credential_warnings(backends: Sequence[BackendConfig]) -> list[str]:
    """One line per backend whose key is missing, naming its YAML path and variable."""
    warnings = []
    for index, backend in enumerate(backends):
        found = backend_credentials(backend)
        if found.problem is None:
            continue
        where = f"backends.{index}" + (".api_key_env" if found.state == "missing" else "")
        warnings.append(
            f"{where}: {found.problem}; backend {backend.name} starts without a key and its "
            "provider will likely refuse its requests (HTTP 401)"
        )
    return warnings
