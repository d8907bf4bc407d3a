"""The YAML schema of the policy framework: declared policies and the profiles that use them.

The host's config embeds these as its `policies:` and `profiles:` sections; the framework
builds pipelines from them (`policies.profiles`) without knowing the rest of the host's
configuration.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from policies.strict_model import StrictModel


class PolicyConfig(StrictModel):
    type: str = Field(min_length=1, description="Built-in type name or a dotted path.")
    name: str = Field(min_length=1)
    params: dict[str, Any] = Field(default_factory=dict)


class PluginRef(StrictModel):
    ref: str = Field(min_length=1, description="A policy's name, or a built-in type.")
    weight: float = Field(1.0, ge=0)


class ProfileConfig(StrictModel):
    name: str = Field(min_length=1)
    plugins: list[PluginRef] = Field(min_length=1)
