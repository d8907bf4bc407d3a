"""Demo traffic for the embedded default: a few conversations that keep the dashboard live.

Only for configs that ask for it (the bundled embedded example, whose engines are
emulated). Requests go through the gateway's own ASGI app, so they take the whole proxy
path (routing, dispatch, relay, telemetry) like a client's. Multi-turn conversations over
a few shared system prompts give the cache-aware route prefixes to reuse; a third stream.
"""

from __future__ import annotations

import asyncio
import logging
import random
from functools import partial
from typing import Any

import httpx
from starlette.types import ASGIApp

from gateway.config.demo import DemoConfig

logger = logging.getLogger("switchyard.demo")

_SYSTEMS = [
    "You are a support agent for a bicycle shop. " * 40,
    "You review Python code for a data team and answer briefly. " * 40,
    "You translate product descriptions into plain English. " * 40,
]
_TURNS = ["What should I check first?", "And after that?", "Summarise in one line.", "Why?"]


async def run_demo(app: ASGIApp, config: DemoConfig, routes: list[str]) -> None:
    """Send demo requests until cancelled; failures are logged and the loop goes on."""
    rng = random.Random()
    chats: list[list[dict[str, str]]] = [[] for _ in range(config.conversations)]
    busy: set[int] = set()  # a conversation waits for its answer before its next turn
    pending: set[asyncio.Task[None]] = set()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://demo", timeout=60) as http:
        try:
            while True:
                await asyncio.sleep(rng.expovariate(config.traffic_rps))
                idle = [i for i in range(len(chats)) if i not in busy]
                if not idle:
                    continue
                index = rng.choice(idle)
                body = _next_request(chats, index, rng, rng.choice(config.routes or routes))
                busy.add(index)
                task = asyncio.create_task(_send(http, body, chats[index]))
                pending.add(task)
                task.add_done_callback(partial(_done, busy, pending, index))
        finally:
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)


def _done(
    busy: set[int], pending: set[asyncio.Task[None]], index: int, task: asyncio.Task[None]
) -> None:
    busy.discard(index)
    pending.discard(task)


def _next_request(
    chats: list[list[dict[str, str]]], index: int, rng: random.Random, route: str
) -> dict[str, Any]:
    chat = chats[index]
    if not chat or len(chat) > 12:
        chat.clear()
        chat.append({"role": "system", "content": _SYSTEMS[index % len(_SYSTEMS)]})
    chat.append({"role": "user", "content": rng.choice(_TURNS)})
    stream = rng.random() < 1 / 3
    body: dict[str, Any] = {
        "model": route,
        "messages": list(chat),
        # Caps above most answers: the emulated engines' answers end on their own.
        "max_tokens": rng.choice([256, 512, 1024]),
        "stream": stream,
        "user": f"demo-{index}",
    }
    if stream:
        body["stream_options"] = {"include_usage": True}
    return body


async def _send(http: httpx.AsyncClient, body: dict[str, Any], chat: list[dict[str, str]]) -> None:
    try:
        if body["stream"]:
            async with http.stream("POST", "/v1/chat/completions", json=body) as response:
                async for _ in response.aiter_bytes():
                    pass
            chat.append({"role": "assistant", "content": "(streamed answer)"})
            return
        response = await http.post("/v1/chat/completions", json=body)
        if response.status_code == 200:
            answer = response.json()["choices"][0]["message"]["content"] or ""
            chat.append({"role": "assistant", "content": answer})
    except (httpx.HTTPError, ValueError, KeyError) as exc:
        logger.debug("demo request failed: %s", exc)
