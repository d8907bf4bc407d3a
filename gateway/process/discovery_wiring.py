"""DNS discovery as a served process wires it: resolved once before the first generation
starts, then followed by a background task for the process's life.

Imported only for a config with a `discover` block (`gateway.http.app`'s lifespan), and
with it dnspython.
"""

from __future__ import annotations

import logging
from contextlib import AsyncExitStack

from gateway.config.root import Config
from gateway.discovery.refresh import Discovery
from gateway.discovery.resolver import DnsLookup
from gateway.process.runtime import Runtime
from gateway.process.tasks import start_task

logger = logging.getLogger("switchyard")


async def open_discovery(config: Config) -> Discovery:
    """Discovery with each entry of `config` looked up once: the first generation starts
    with the addresses found (an entry whose lookup failed starts empty and is looked up
    again within its interval)."""
    discovery = Discovery(DnsLookup())
    await discovery.refresh(config)
    for row in discovery.status(config):
        logger.info(
            "discovery: %s: %d backends from %s %s",
            row["entry"], len(row["backends"]), row["record"], row["dns"],
        )  # fmt: skip
    return discovery


def follow_discovery(discovery: Discovery, runtime: Runtime, stack: AsyncExitStack) -> None:
    """Look each entry up every `interval_s` and apply a change, until `stack` closes."""
    start_task(stack, discovery.run(runtime), name="dns-discovery")


def start_discovery(runtime: Runtime, stack: AsyncExitStack) -> Discovery:
    """DNS discovery for a process started without it (a reload adds the first `discover`
    block): nothing looked up yet (the reload's `prepare` does), followed until `stack`
    closes."""
    discovery = Discovery(DnsLookup())
    follow_discovery(discovery, runtime, stack)
    logger.info("discovery: started by a config reload")
    return discovery
