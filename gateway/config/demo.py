"""The `demo` section: demo traffic through the gateway's own app, for the embedded default
(`gateway.process.demo_traffic` sends it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class DemoConfig(BaseModel):
    """`demo:` in the config; the embedded example turns it on."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    traffic_rps: float = Field(
        0.0,
        ge=0,
        le=50,
        description="Demo requests per second through the gateway; 0: off. Off too while "
        "clients need a key (server.api_keys_env, keys.enabled): the demo sends none.",
    )
    routes: list[str] = Field(default_factory=list, description="Routes to use; empty: all.")
    conversations: int = Field(12, ge=1, le=1000, description="Conversations kept going.")
