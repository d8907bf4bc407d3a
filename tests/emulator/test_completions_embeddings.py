"""Text completions and embeddings over real HTTP."""

from __future__ import annotations

import base64
import math
import struct

import httpx

from tests.emulator.conftest import MODEL, StartEmulator, sse_payloads


async def test_completion_with_prompt_list_and_n(client: httpx.AsyncClient) -> None:
    request = {"model": MODEL, "prompt": ["one prompt", "another one"], "n": 2, "max_tokens": 3}
    body = (await client.post("/completions", json=request)).json()
    assert body["object"] == "text_completion" and body["id"].startswith("cmpl-")
    assert [choice["index"] for choice in body["choices"]] == [0, 1, 2, 3]
    assert all(len(choice["text"].split()) == 3 for choice in body["choices"])
    assert body["usage"]["prompt_tokens"] == 2 + 2
    assert body["usage"]["completion_tokens"] == 12


async def test_completion_stream_and_logprobs(client: httpx.AsyncClient) -> None:
    request = {
        "model": MODEL,
        "prompt": "hello",
        "max_tokens": 4,
        "logprobs": 2,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    payloads = sse_payloads((await client.post("/completions", json=request)).text)
    assert payloads[-1] == "[DONE]"
    assert payloads[-2]["usage"]["completion_tokens"] == 4
    chunks = payloads[:-2]
    assert all(chunk["object"] == "text_completion" for chunk in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "length"
    texts = [chunk["choices"][0]["text"] for chunk in chunks[:-1]]
    logprobs = [chunk["choices"][0]["logprobs"] for chunk in chunks[:-1]]
    assert [entry["tokens"][0] for entry in logprobs] == texts
    assert all(len(entry["top_logprobs"][0]) == 2 for entry in logprobs)

    plain = (await client.post("/completions", json={**request, "stream": False})).json()
    assert plain["choices"][0]["text"] == "".join(texts)
    assert plain["choices"][0]["logprobs"]["text_offset"][:2] == [0, len(texts[0])]


async def test_completion_token_prompt(client: httpx.AsyncClient) -> None:
    request = {"model": MODEL, "prompt": [101, 102, 103, 104, 105], "max_tokens": 1}
    body = (await client.post("/completions", json=request)).json()
    assert body["usage"]["prompt_tokens"] == 5


async def test_embeddings_are_deterministic_unit_vectors(client: httpx.AsyncClient) -> None:
    request = {"model": MODEL, "input": ["alpha", "beta", "alpha"]}
    body = (await client.post("/embeddings", json=request)).json()
    assert body["object"] == "list" and body["model"] == MODEL
    vectors = [item["embedding"] for item in body["data"]]
    assert [item["index"] for item in body["data"]] == [0, 1, 2]
    assert all(len(vector) == 64 for vector in vectors)
    assert all(math.isclose(math.hypot(*vector), 1.0) for vector in vectors)
    assert vectors[0] == vectors[2] != vectors[1]
    assert body["usage"] == {"prompt_tokens": 3, "total_tokens": 3}


async def test_embeddings_dimensions_and_base64(client: httpx.AsyncClient) -> None:
    request = {"model": MODEL, "input": "alpha", "dimensions": 8}
    floats = (await client.post("/embeddings", json=request)).json()["data"][0]["embedding"]
    assert len(floats) == 8
    encoded = await client.post("/embeddings", json={**request, "encoding_format": "base64"})
    packed = base64.b64decode(encoded.json()["data"][0]["embedding"])
    decoded = struct.unpack("<8f", packed)
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(decoded, floats, strict=True))


async def test_embedding_dim_setting(start_emulator: StartEmulator) -> None:
    server = await start_emulator(embedding_dim=5)
    async with httpx.AsyncClient(base_url=server.base_url) as http:
        body = (await http.post("/embeddings", json={"model": MODEL, "input": "x"})).json()
    assert len(body["data"][0]["embedding"]) == 5


async def test_embeddings_reject_unknown_model(client: httpx.AsyncClient) -> None:
    response = await client.post("/embeddings", json={"model": "other", "input": "x"})
    assert response.status_code == 404
    assert response.json()["error"]["code"] == "model_not_found"
