"""The `switchyard` command: check and explain in-process, serve and emulate as processes."""

from __future__ import annotations

import contextlib
import io
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import openai
import orjson
import pytest
import yaml

from gateway.cli import embedded_config_path, main
from tests.conftest import make_config, until
from tests.gateway.processes import (
    START_TIMEOUT_S,
    free_port,
    port_is_free,
    running,
    stop,
    wait_ready,
)

REPO = Path(__file__).resolve().parents[2]
DEPLOYMENT = REPO / "examples" / "deployment.yaml"
MODEL = "emulated-model"


def closed_url() -> str:
    return f"http://127.0.0.1:{free_port()}/v1"


def write_yaml(tmp_path: Path, data: dict[str, Any], name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def broken_config() -> dict[str, Any]:
    """Four problems across check's three passes: an extra key (shape), a route naming an
    unknown backend (references), a bad policy parameter and a profile referring to
    nothing (policies)."""
    config = make_config({"a": closed_url(), "b": closed_url()})
    config["routes"][0]["backends"] = ["a", "ghost"]
    config["policies"] = [
        {"type": "weighted-random-picker", "name": "explore", "params": {"temperature": 0}}
    ]
    config["profiles"][0]["plugins"].insert(2, {"ref": "nowhere"})
    config["colour"] = "blue"
    return config


# -- check ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", [embedded_config_path(), DEPLOYMENT], ids=["embedded", "deploy"])
def test_check_accepts_a_valid_config(
    path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the deployment example names in its environment.
    monkeypatch.setenv("SWITCHYARD_CLIENT_KEYS", "client-key-1")
    monkeypatch.setenv("CLOUD_API_KEY", "cloud-key-1")
    assert main(["check", "--config", str(path)]) == 0
    captured = capsys.readouterr()
    assert re.fullmatch(r"ok: \d+ backends, \d+ routes, \d+ profiles\n", captured.out)
    assert captured.err == ""


def test_check_without_config_checks_the_embedded_one(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check"]) == 0
    assert capsys.readouterr().out == "ok: 5 backends, 4 routes, 3 profiles\n"


@pytest.mark.parametrize(
    ("break_it", "expected"),
    [
        (lambda c: c.update(colour="blue"), "colour: Extra inputs are not permitted"),
        (
            lambda c: c["routes"][0]["backends"].append("ghost"),
            "routes.0.backends.2: unknown backend 'ghost'",
        ),
        (
            lambda c: c.update(
                policies=[
                    {"type": "weighted-random-picker", "name": "x", "params": {"temperature": 0}}
                ]
            ),
            "policies.0.params.temperature: Input should be greater than 0",
        ),
        (
            lambda c: c["profiles"][0]["plugins"].insert(2, {"ref": "nowhere"}),
            "profiles.0.plugins.2.ref: unknown policy 'nowhere'",
        ),
    ],
    ids=["extra-key", "unknown-backend", "bad-param", "unknown-ref"],
)
def test_check_names_the_yaml_path_of_a_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], break_it: Any, expected: str
) -> None:
    config = make_config({"a": closed_url(), "b": closed_url()})
    break_it(config)
    path = write_yaml(tmp_path, config)
    assert main(["check", "--config", str(path)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [f"config error in {path}:", f"  {expected}"]


def test_check_lists_every_policy_problem_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = broken_config()
    config["routes"][0]["backends"] = ["a", "b"]
    del config["colour"]
    config["profiles"][0]["plugins"].insert(0, {"ref": "healthy-filter", "weight": 2})
    assert main(["check", "--config", str(write_yaml(tmp_path, config))]) == 2
    problems = capsys.readouterr().err.splitlines()[1:]
    assert problems == [
        "  policies.0.params.temperature: Input should be greater than 0",
        "  profiles.0.plugins.0.weight: only scorers take a weight; 'healthy-filter' is a filter",
        "  profiles.0.plugins.1.ref: 'healthy-filter' appears twice",
        "  profiles.0.plugins.3.ref: unknown policy 'nowhere'",
    ]


def test_check_lists_every_problem_of_a_file_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_yaml(tmp_path, broken_config())
    assert main(["check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    for where in (
        "colour:",
        "routes.0.backends.1:",
        "policies.0.params.temperature:",
        "profiles.0.plugins.2.ref:",
    ):
        assert f"  {where}" in err


def test_check_reports_a_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "nope.yaml"
    assert main(["check", "--config", str(missing)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"config error in {missing}:",
        "  (file): No such file or directory",
    ]


# -- explain --------------------------------------------------------------------------


@pytest.fixture
def sentinel() -> Iterator[socket.socket]:
    """A listening socket a backend points at: any connection to it would queue up."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        sock.setblocking(False)
        yield sock


def explain_config(tmp_path: Path, sentinel: socket.socket) -> Path:
    port = sentinel.getsockname()[1]
    backends = {
        "gpu-a": closed_url(),
        "gpu-b": closed_url(),
        "gpu-c": f"http://127.0.0.1:{port}/v1",
    }
    profile: list[dict[str, Any]] = [
        {"ref": "model-match-filter"},
        {"ref": "healthy-filter"},
        {"ref": "load", "weight": 1.0},
        {"ref": "sticky", "weight": 0.5},
        {"ref": "max-score-picker"},
    ]
    policies = [
        {"type": "least-load-scorer", "name": "load"},
        {"type": "session-affinity-scorer", "name": "sticky"},
    ]
    config = make_config(backends, profile=profile, policies=policies)
    config["routes"][0]["name"] = "chat"
    return write_yaml(tmp_path, config)


def run_explain(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["explain", *args]) == 0
    result: dict[str, Any] = orjson.loads(capsys.readouterr().out)
    return result


def test_explain_shows_every_candidates_scores_and_sends_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sentinel: socket.socket
) -> None:
    config = explain_config(tmp_path, sentinel)
    request = tmp_path / "request.json"
    request.write_bytes(
        orjson.dumps({"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    )
    args = [str(request), "--config", str(config), "--header", "X-Session-Id=user-12345"]
    result = run_explain(capsys, *args)

    assert result["route"] == "chat" and result["upstream_model"] == MODEL
    assert sorted(result["order"]) == ["gpu-a", "gpu-b", "gpu-c"]
    assert result["chosen"] == result["order"][0]
    assert result["picker"] == "max-score-picker" and result["picker_reason"]
    for candidate in result["candidates"]:
        assert candidate["scores"].keys() == {"load", "sticky"}
        assert candidate["verdicts"].keys() == {"model-match-filter", "healthy-filter"}
        for entry in [*candidate["scores"].values(), *candidate["verdicts"].values()]:
            assert entry["reason"]
        assert candidate["scores"]["load"] == {"score": 1.0, "reason": "0 in flight of 64"}
        assert candidate["scores"]["sticky"]["reason"].startswith("session user…")
    pinned = [c for c in result["candidates"] if c["scores"]["sticky"]["score"] == 1.0]
    assert [c["backend"] for c in pinned] == [result["chosen"]]
    # The session decides, not chance: the same request explains the same way.
    assert run_explain(capsys, *args)["order"] == result["order"]
    with pytest.raises(BlockingIOError):
        sentinel.accept()


def test_explain_reads_stdin_and_other_endpoints(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    sentinel: socket.socket,
) -> None:
    config = explain_config(tmp_path, sentinel)
    raw = orjson.dumps({"model": "chat", "prompt": "Once upon", "user": "someone-else"})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw)))
    result = run_explain(capsys, "-", "--config", str(config), "--endpoint", "completions")
    assert result["route"] == "chat" and len(result["candidates"]) == 3
    # Without x-session-id the OpenAI `user` field keys the session.
    assert all(
        c["scores"]["sticky"]["reason"].startswith("session some…") for c in result["candidates"]
    )
    with pytest.raises(BlockingIOError):
        sentinel.accept()


SAME_SESSION: dict[str, dict[str, Any]] = {
    "chat.completions": {"messages": [{"role": "user", "content": "hi"}], "user": "someone-else"},
    "messages": {
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 16,
        "metadata": {"user_id": "someone-else"},
    },
    "responses": {"input": "hi", "user": "someone-else"},
}


def test_explain_reads_messages_and_responses_bodies_as_the_proxy_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sentinel: socket.socket
) -> None:
    """Each body is read by its path's Dialect into the chat request the gateway routes, so
    one session key ranks the backends the same whichever API carries it (Anthropic's
    `metadata.user_id`, OpenAI's `user`)."""
    config = explain_config(tmp_path, sentinel)
    orders = {}
    for endpoint, body in SAME_SESSION.items():
        request = tmp_path / f"{endpoint}.json"
        request.write_bytes(orjson.dumps({"model": "chat", **body}))
        args = [str(request), "--config", str(config), "--endpoint", endpoint]
        result = run_explain(capsys, *args)
        assert result["route"] == "chat" and len(result["candidates"]) == 3
        for candidate in result["candidates"]:
            assert candidate["scores"]["sticky"]["reason"].startswith("session some…")
        orders[endpoint] = result["order"]
    assert orders["messages"] == orders["responses"] == orders["chat.completions"]
    with pytest.raises(BlockingIOError):
        sentinel.accept()


@pytest.mark.parametrize(
    ("endpoint", "body", "message"),
    [
        ("messages", {"messages": [{"role": "user", "content": "hi"}]}, "max_tokens"),
        ("responses", {"input": "hi", "previous_response_id": "resp_1"}, "previous_response_id"),
    ],
    ids=["messages-without-max-tokens", "responses-with-stored-state"],
)
def test_explain_refuses_a_body_its_api_would_refuse(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sentinel: socket.socket,
    endpoint: str,
    body: dict[str, Any],
    message: str,
) -> None:
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps({"model": "chat", **body}))
    config = explain_config(tmp_path, sentinel)
    code = main(["explain", str(request), "--config", str(config), "--endpoint", endpoint])
    assert code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("endpoint", ["messages", "responses"])
def test_explain_a_mixed_route_of_the_embedded_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], endpoint: str
) -> None:
    """No --config: the embedded default, whose route `mixed` spans the local engines and
    two emulated clouds; a placement header keeps it to the clouds. Nothing is started."""
    body: dict[str, Any] = (
        {"messages": [{"role": "user", "content": "hi"}], "max_tokens": 16}
        if endpoint == "messages"
        else {"input": "hi"}
    )
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps({"model": "mixed", **body}))
    header = "x-switchyard-require-tags=cloud"
    result = run_explain(capsys, str(request), "--endpoint", endpoint, "--header", header)
    assert result["route"] == "mixed"
    assert result["upstream_models"] == {
        **dict.fromkeys(["engine-a", "engine-b", "engine-c"], "switchyard-emulated"),
        "cloud-anthropic": "claude-emulated",
        "cloud-gemini": "gemini-emulated",
    }
    assert sorted(result["order"]) == ["cloud-anthropic", "cloud-gemini"]
    assert result["chosen"] in result["order"]
    assert set(result["placement"]["excluded"]) == {"engine-a", "engine-b", "engine-c"}


def test_explain_reports_an_unknown_route_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], sentinel: socket.socket
) -> None:
    request = tmp_path / "request.json"
    request.write_bytes(orjson.dumps({"model": "nope", "messages": [{"role": "user"}]}))
    code = main(["explain", str(request), "--config", str(explain_config(tmp_path, sentinel))])
    assert code != 0
    assert "nope" in capsys.readouterr().err


# -- serve and emulate as real processes ----------------------------------------------


def assert_stopped_gracefully(proc: subprocess.Popen[bytes]) -> None:
    # uvicorn shuts down, then re-raises the SIGTERM it caught; a kill would be -SIGKILL.
    assert stop(proc) in (0, -signal.SIGTERM)


@dataclass(frozen=True)
class Serving:
    """A `switchyard serve` process on the embedded default, with its own record store."""

    proc: subprocess.Popen[bytes]
    port: int
    log: Path
    database: Path


@contextlib.contextmanager
def serving_embedded(tmp_path: Path) -> Iterator[Serving]:
    """`switchyard serve` on the embedded default, ready; stopped when the block ends."""
    port = free_port()
    log = tmp_path / "serve.log"
    database = tmp_path / "records.db"
    env = {"SWITCHYARD_DATABASE_URL": f"sqlite+aiosqlite:///{database}"}
    with running(["serve", "--port", str(port)], log, env) as proc:
        wait_ready(f"http://127.0.0.1:{port}/healthz", proc, log)
        yield Serving(proc, port, log, database)


def test_serve_runs_the_embedded_config_and_stops_cleanly(tmp_path: Path) -> None:
    with serving_embedded(tmp_path) as served:
        proc, port, log, database = served.proc, served.port, served.log, served.database
        # The engines' ports are random; the start-up log is the only place that names them.
        engines = [
            int(p)
            for p in re.findall(r"emulated engine \S+ listening on \S+:(\d+)/v1", log.read_text())
        ]
        assert len(engines) == 5  # three local engines, an Anthropic- and a Gemini-format cloud
        with httpx.Client(trust_env=False) as http:
            for engine in engines:
                assert http.get(f"http://127.0.0.1:{engine}/health").status_code == 200

        with openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0
        ) as client:
            messages: Any = [{"role": "user", "content": "hi"}]
            reply = client.chat.completions.create(model="default", messages=messages, max_tokens=4)
            [choice] = reply.choices
            assert choice.message.content
            # The embedded engines' answers end on their own: at most the 4 tokens asked.
            words = len(choice.message.content.split())
            assert reply.usage is not None and reply.usage.completion_tokens == words <= 4
            assert (choice.finish_reason == "length") == (words == 4)
            stream = client.chat.completions.create(
                model="default", messages=messages, max_tokens=4, stream=True
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            assert text == reply.choices[0].message.content
        with httpx.Client(trust_env=False, base_url=f"http://127.0.0.1:{port}") as http:
            # The embedded example's demo traffic keeps the dashboard live from the start.
            def dashboard() -> dict[str, Any]:
                data: dict[str, Any] = http.get("/v1/switchyard/dashboard").json()
                return data

            until(lambda: dashboard()["fleet"]["summary"]["requests"] >= 4, "4 requests shown")
            assert dashboard()["store"]["up"] is True
        assert_stopped_gracefully(proc)

    assert "Application shutdown complete" in log.read_text()
    with sqlite3.connect(database) as db:
        (stored,) = db.execute("SELECT count(*) FROM requests").fetchone()
    assert stored >= 4  # every record was written before the gateway stopped
    assert port_is_free(port)
    assert all(port_is_free(engine) for engine in engines)


# What a newcomer sees: no library chatter, a banner, then one line per request.
NOISE = (
    "Started server process",
    "Waiting for application startup",
    "setup plugin",
    "Context impl",
    "Will assume",
)
REQUEST_LINE = re.compile(
    r"\d\d:\d\d:\d\d (?P<route>\S+) -> (?P<backend>\S+) (?P<status>\d{3}) \d+ms"
    r"(?: stream)? (?:cached [\d,]+/[\d,]+ tok|prompt [\d,]+ tok|no usage)(?: \d+ retr(?:y|ies))?"
    r"(?: error \S+)?  decision (?P<decision>[0-9a-f]{16})"
)


def chat(port: int) -> str:
    """One chat request through the gateway; its decision id."""
    body = {"model": "default", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}
    with httpx.Client(trust_env=False, timeout=30) as http:
        reply = http.post(f"http://127.0.0.1:{port}/v1/chat/completions", json=body)
    assert reply.status_code == 200
    return reply.headers["x-switchyard-decision"]


def logged_line(log: Path, text: str, proc: subprocess.Popen[bytes]) -> str:
    """The first line of `log` holding `text`, once the telemetry thread has written it."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        found = [line for line in log.read_text().splitlines() if text in line]
        if found:
            return found[0]
        assert proc.poll() is None, f"exited with {proc.returncode}:\n{log.read_text()}"
        assert time.monotonic() < deadline, f"{text!r} never logged:\n{log.read_text()}"
        time.sleep(0.05)


def test_serve_prints_a_banner_then_one_line_per_request(tmp_path: Path) -> None:
    with serving_embedded(tmp_path) as served:
        proc, port, log, database = served.proc, served.port, served.log, served.database
        decision = chat(port)
        line = logged_line(log, f"decision {decision}", proc)
        assert_stopped_gracefully(proc)
    output = log.read_text()
    lines = output.splitlines()
    first = f"switchyard serving http://127.0.0.1:{port}/v1 (pid {proc.pid})"
    assert output.count("switchyard serving") == 1
    start = lines.index(first)
    assert lines[start + 1 : start + 8] == [
        f"  dashboard  http://127.0.0.1:{port}/dashboard",
        f"  config     {embedded_config_path()} (the embedded default)",
        f"  store      sqlite+aiosqlite:///{database}",
        "  fleet      5 backends, 4 routes: default, least-load, round-robin, mixed",
        "  auth       off (no client key needed; on 127.0.0.1 only)",
        "  demo       1 req/s on default, least-load",
        "  requests   one line each (--access-log json: the whole record and its decision)",
    ]
    mine = REQUEST_LINE.fullmatch(line)
    assert mine is not None, line
    assert (mine["route"], mine["status"]) == ("default", "200")
    assert mine["backend"] in {"engine-a", "engine-b", "engine-c"}
    assert " cached " in line  # the emulated engines report their cached tokens
    # The demo's requests are logged the same way (the banner announced them).
    requests = [text for text in lines if "  decision " in text]
    assert all(REQUEST_LINE.fullmatch(text) for text in requests), requests
    assert '"event":"request"' not in output
    assert [noise for noise in NOISE if noise in output] == []
    assert output.count("Uvicorn running on") == 1
    assert "Running upgrade" in output  # a new database: the migration's steps still show


def test_serve_with_workers_prints_one_banner_and_json_records_when_asked(
    tmp_path: Path,
) -> None:
    from tests.gateway.telemetry.test_workers import CONFIG

    config = write_yaml(tmp_path, CONFIG)
    port = free_port()
    log = tmp_path / "serve.log"
    command = ["serve", "--config", str(config), "--port", str(port), "--workers", "2"]
    with running([*command, "--access-log", "json"], log) as proc:
        wait_ready(f"http://127.0.0.1:{port}/readyz", proc, log, timeout_s=30)
        decision = chat(port)
        line = logged_line(log, decision, proc)
    output = log.read_text()
    assert output.count("switchyard serving") == 1  # the parent's, not each worker's
    lines = output.splitlines()
    assert f"switchyard serving http://127.0.0.1:{port}/v1 (pid {proc.pid}, 2 workers)" in lines
    assert "  store      off" in lines
    assert "  requests   one JSON record each (--access-log line: one short line)" in lines
    _, _, text = line.partition(" switchyard.access ")
    record = orjson.loads(text)
    assert (record["event"], record["status"], record["backend"]) == ("request", 200, "e1")
    assert record["decision"]["id"] == decision
    assert [c["backend"] for c in record["decision"]["candidates"]] == ["e1"]
    assert [noise for noise in NOISE if noise in output] == []


def test_serve_refuses_a_bad_config_like_check(tmp_path: Path) -> None:
    config = broken_config()
    config["routes"][0]["backends"] = ["a", "b"]
    del config["colour"]
    log = tmp_path / "serve.log"
    with running(
        ["serve", "--config", str(write_yaml(tmp_path, config)), "--port", str(free_port())], log
    ) as proc:
        proc.wait(timeout=START_TIMEOUT_S)
    output = log.read_text()
    assert proc.returncode == 2
    assert "  policies.0.params.temperature: Input should be greater than 0" in output
    assert "Traceback" not in output


def test_emulate_serves_chat_and_stops_cleanly(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "emulate.log"
    argv = ["emulate", "--port", str(port), "--token-delay-ms", "0", "--ignore-eos"]
    with running(argv, log) as proc:
        base = f"http://127.0.0.1:{port}"
        wait_ready(f"{base}/health", proc, log)
        with httpx.Client(base_url=base, trust_env=False, timeout=10) as http:
            body = {
                "model": MODEL,
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 3,
            }
            reply = http.post("/v1/chat/completions", json=body)
            assert reply.status_code == 200
            assert reply.json()["usage"]["completion_tokens"] == 3  # --ignore-eos: exactly
        assert_stopped_gracefully(proc)
    assert f"emulator listening on {base}/v1" in log.read_text()
    assert port_is_free(port)


def test_serve_asks_uvicorn_for_no_websocket_protocol() -> None:
    """The gateway has no WebSocket route: uvicorn loads none of its protocols (and a client
    asking to upgrade gets a plain HTTP answer)."""
    from gateway import cli

    args = cli.build_parser("serve").parse_args(["serve"])
    config = cli._load(None)
    options = cli._uvicorn_options(args, config, "127.0.0.1", 8080)
    assert options["ws"] == "none"
