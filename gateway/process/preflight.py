"""What `serve` needs of its environment before it starts, found once for `serve` and
`switchyard check` alike, so that both report the same problems in the same words.

Errors are what `serve` refuses to start with, all of them in one run: a named key variable
that is unset or empty (`server.api_keys_env`, `admin_keys_env`, `metrics_token_env`), a
missing or short key secret and a missing store with `keys.enabled`, an unusable
`SWITCHYARD_DATABASE_URL`, a public address without client keys. Warnings are what it
starts with regardless: a backend without its key (the others serve), a backend whose
`base_url` lacks the path its provider's has (`/v1`), demo traffic left off because
clients need keys. Messages name settings and variables, never their values.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO
from urllib.parse import urlsplit

from gateway.config.credentials import credential_warnings
from gateway.errors import ConfigError
from gateway.store.config import resolve_url
from gateway.tenancy.wiring import check_exposure, read_settings
from providers.presets import provider_base_url

if TYPE_CHECKING:
    from gateway.config.backends import BackendConfig
    from gateway.config.root import Config


@dataclass(frozen=True, slots=True)
class Preflight:
    errors: tuple[str, ...]
    """Each a problem `serve` refuses to start with, naming its setting."""
    sources: tuple[str, ...]
    """Where the errors come from (`environment`, `<config>`), for the report's heading."""
    warnings: tuple[str, ...]
    """Each a problem `serve` starts with regardless."""

    def warn_or_refuse(self, stream: TextIO) -> None:
        """Print each warning on `stream`; then, if there are errors, raise one ConfigError
        holding them all (the CLI prints it and exits 2)."""
        for warning in self.warnings:
            print(f"warning: {warning}", file=stream)
        if self.errors:
            raise ConfigError(" and ".join(self.sources), list(self.errors))


def preflight(config: Config, host: str) -> Preflight:
    """Every problem of serving `config` on `host` with this process's environment."""
    steps: tuple[Callable[[], object], ...] = (
        lambda: resolve_url(config.store),
        lambda: read_settings(config),
        lambda: check_exposure(config, host),
    )
    errors: dict[str, None] = {}  # in order, once: the store's URL is read by two steps
    sources: dict[str, None] = {}
    for step in steps:
        try:
            step()
        except ConfigError as exc:
            sources[exc.source] = None
            errors.update(dict.fromkeys(exc.problems))
    warnings = credential_warnings(config.backends) + base_url_warnings(config.backends)
    if config.demo.traffic_rps > 0 and not config.demo_traffic_on:
        warnings.append(
            "demo.traffic_rps: no demo traffic, because clients need a key here (keys.enabled "
            "or server.api_keys_env) and the demo sends none; remove the demo section"
        )
    return Preflight(tuple(errors), tuple(sources), tuple(warnings))


def base_url_warnings(backends: Sequence[BackendConfig]) -> list[str]:
    """One line per backend whose `base_url` has no path where its provider's base URL
    has one: its requests would go to `/messages`, not `/v1/messages`, and get 404s. The
    line names the YAML path and the prefix to add, never the URL (it may hold a secret)."""
    warnings = []
    for index, backend in enumerate(backends):
        official = provider_base_url(backend.kind, backend.preset_name)
        if backend.base_url is None or official is None:
            continue
        prefix = urlsplit(official).path.rstrip("/")
        if not prefix or urlsplit(backend.base_url).path.strip("/"):
            continue
        service = f"preset {backend.preset}" if backend.preset else f"kind {backend.kind}"
        warnings.append(
            f"backends.{index}.base_url: has no path, but {service}'s API is under {prefix} "
            f"({official}); backend {backend.name}'s requests will likely get HTTP 404: "
            f"end its base_url with {prefix}"
        )
    return warnings
