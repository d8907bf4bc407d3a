"""The request pipeline: route lookup, snapshot, policy decision."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping

from gateway.config import Config, RouteConfig
from gateway.errors import NotFound
from gateway.state import FleetState
from policies import Pipeline
from policies.base import Decision, Endpoint, RequestInfo, Snapshot


class Router:
    """Turns a client's model name and request into a ranked Decision."""

    def __init__(
        self, config: Config, state: FleetState, pipelines: Mapping[str, Pipeline]
    ) -> None:
        self._routes = {route.name: route for route in config.routes}
        self._state = state
        self._pipelines = pipelines

    @property
    def routes(self) -> Mapping[str, RouteConfig]:
        return self._routes

    def route(self, model: str) -> RouteConfig:
        route = self._routes.get(model)
        if route is None:
            raise NotFound(
                f"The model '{model}' does not exist; known routes: {', '.join(self._routes)}",
                param="model",
            )
        return route

    def decide(
        self,
        route: RouteConfig,
        endpoint: Endpoint,
        *,
        stream: bool,
        session_key: str | None,
        prompt_chars: int = 0,
    ) -> Decision:
        raw_id = os.urandom(8)
        info = RequestInfo(
            route=route.name,
            model=route.model,
            endpoint=endpoint,
            stream=stream,
            session_key=session_key,
            seq=self._state.next_seq(route.name),
            rng_seed=int.from_bytes(raw_id, "big"),
            prompt_chars=prompt_chars,
        )
        views = self._state.views(route.backends)
        snapshot = Snapshot(request=info, backends=views, now_s=time.time())
        pipeline = self._pipelines[route.profile]
        return pipeline.decide(snapshot, list(views.values()), raw_id.hex())
