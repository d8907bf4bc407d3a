"""A request's prompt work: its fingerprint and how much of it each backend holds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gateway.prefix.fingerprint import Fingerprint


@dataclass(frozen=True, slots=True)
class PromptWork:
    """The prompt's fingerprint and how much of it each backend is predicted to hold."""

    fingerprint: Fingerprint | None = None
    cached_tokens: Mapping[str, int] = field(default_factory=dict)

    @property
    def prompt_tokens(self) -> int:
        return self.fingerprint.prompt_tokens if self.fingerprint else 0

    def uncached(self, backend: str) -> int:
        return max(0, self.prompt_tokens - self.cached_tokens.get(backend, 0))
