"""Tiny synthetic traces written by tests: segments and requests as JSON Lines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson


def segment(segment_id: str, text: str) -> dict[str, Any]:
    return {"kind": "segment", "id": segment_id, "text": text}


def request(
    request_id: str,
    *contents: list[str],
    roles: tuple[str, ...] = ("user", "assistant"),
    max_tokens: int = 4,
    **fields: Any,
) -> dict[str, Any]:
    """A request whose messages alternate `roles`, each message a list of segment ids."""
    messages = [
        {"role": roles[i % len(roles)], "content": content} for i, content in enumerate(contents)
    ]
    return {
        "kind": "request",
        "id": request_id,
        "session": fields.pop("session", "s0"),
        "model": "default",
        "messages": messages,
        "max_tokens": max_tokens,
        "stream": fields.pop("stream", True),
        **fields,
    }


def write_trace(path: Path, lines: list[dict[str, Any] | str]) -> Path:
    """Objects become JSON lines; strings are written as they are (for broken lines)."""
    path.write_bytes(
        b"\n".join(line.encode() if isinstance(line, str) else orjson.dumps(line) for line in lines)
        + b"\n"
    )
    return path


def agent_trace(path: Path, shared_chars: int = 2000) -> Path:
    """Ten requests: two sessions sharing a system prompt, a fan-out, a failure-free chain."""
    tools = '[{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]'
    lines: list[dict[str, Any] | str] = [
        {"kind": "meta", "name": "synthetic", "requests": 10},
        segment("sys", "You are a test agent. " * (shared_chars // 22)),
        segment("tools", tools),
    ]
    for s in ("a", "b"):
        lines += [segment(f"{s}-task", f"task {s} " * 50), segment(f"{s}-out", f"out {s} " * 40)]
    lines += [segment(f"sub{i}", f"sub-agent {i} brief " * 5) for i in range(4)]
    lines += [
        request("r1", ["sys"], ["a-task"], roles=("system", "user"), tools="tools", start=0.0),
        request("r2", ["sys"], ["b-task"], roles=("system", "user"), start=0.2, session="s1"),
        request("r3", ["sys"], ["a-task"], ["a-out"], roles=("system", "user", "assistant"),
                parent="r1", after=0.1),
        request("r4", ["sys"], ["b-task"], ["b-out"], roles=("system", "user", "assistant"),
                parent="r2", after=0.1, session="s1"),
    ]  # fmt: skip
    for i in range(4):  # sub-agents forking from r3
        lines.append(
            request(f"sub{i}", ["sys"], ["a-task"], ["a-out"], [f"sub{i}"],
                    roles=("system", "user", "assistant", "user"), parent="r3", after=0.05)
        )  # fmt: skip
    lines += [
        request("r5", ["a-out"], start=0.3, session="one-shot"),
        request("r6", ["b-out"], start=0.4, session="one-shot", stream=False),
    ]
    return write_trace(path, lines)
