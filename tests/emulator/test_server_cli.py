"""The in-process server handle and the ``switchyard emulate`` command line."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys

import httpx
import pytest

from emulator.cli import add_arguments, parse, run, settings_from_args
from emulator.server import EmulatorServer
from emulator.settings import EmulatorSettings
from tests.emulator.conftest import StartEmulator, chat_request

_RUN_CLI = (
    "import argparse, sys\n"
    "from emulator import cli\n"
    "parser = argparse.ArgumentParser()\n"
    "cli.add_arguments(parser)\n"
    "sys.exit(cli.run(parser.parse_args(sys.argv[1:])))\n"
)


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "example.com"])
def test_only_loopback_hosts(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        EmulatorServer(host=host)
    assert run(_parse("--host", host)) == 2


async def test_server_lifecycle_and_ipv6_loopback() -> None:
    server = EmulatorServer(EmulatorSettings(models=["a"]), host="::1")
    with pytest.raises(RuntimeError):
        _ = server.port
    try:
        await server.start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    try:
        assert server.base_url == f"http://[::1]:{server.port}/v1"
        async with httpx.AsyncClient(base_url=server.base_url) as http:
            assert (await http.get("/models")).json()["data"][0]["id"] == "a"
        with pytest.raises(RuntimeError):
            await server.start()
    finally:
        await server.stop()
    await server.stop()  # a second stop is harmless


async def test_busy_port_raises_oserror(emulator: EmulatorServer) -> None:
    with pytest.raises(OSError):
        await EmulatorServer(port=emulator.port).start()


async def test_stop_does_not_wait_for_endless_streams(start_emulator: StartEmulator) -> None:
    server = await start_emulator(token_delay_ms=1000)
    http = httpx.AsyncClient(base_url=server.base_url)
    request = chat_request(stream=True, max_tokens=100)
    async with http.stream("POST", "/chat/completions", json=request):
        await asyncio.wait_for(server.stop(), timeout=8)
    await http.aclose()


def test_settings_from_args() -> None:
    args = _parse(
        "--model", "a", "--model", "b", "--token-delay-ms", "0", "--time-scale", "0.5",
        "--fail-status", "503", "--fail-count", "2", "--cut-stream-after-chunks", "4",
    )  # fmt: skip
    settings = settings_from_args(args)
    assert settings.models == ["a", "b"]
    assert (settings.token_delay_ms, settings.time_scale) == (0.0, 0.5)
    assert (settings.faults.fail_status, settings.faults.fail_count) == (503, 2)
    assert settings.faults.cut_stream_after_chunks == 4
    assert settings_from_args(_parse()) == EmulatorSettings()
    assert run(_parse("--time-scale", "-1")) == 2


def test_answers_flag() -> None:
    assert settings_from_args(_parse("--answers", "oracle")).answers == "oracle"
    assert settings_from_args(_parse()).answers == "filler"
    with pytest.raises(SystemExit):
        _parse("--answers", "genius")


def test_key_and_rate_limit_flags() -> None:
    args = _parse(
        "--api-key", "emulator-secret", "--rate-limit-requests-per-minute", "60",
        "--rate-limit-tokens-per-minute", "1000",
    )  # fmt: skip
    settings = settings_from_args(args)
    assert settings.api_key == "emulator-secret"
    assert (settings.rate_limit_requests_per_minute, settings.rate_limit_tokens_per_minute) == (
        60,
        1000,
    )
    assert "emulator-secret" not in repr(settings)
    assert run(_parse("--rate-limit-requests-per-minute", "0")) == 2


def test_quality_fault_flags() -> None:
    args = _parse(
        "--fault-seed", "7", "--loop-rate", "0.5", "--malformed-tool-call-rate", "0.25",
        "--truncate-context-tokens", "2048", "--substitute-model", "--latency-spike-rate", "0.1",
        "--latency-spike-s", "3", "--error-burst-rate", "0.02", "--error-burst-length", "4",
        "--error-burst-status", "429", "--cut-stream-rate", "0.3",
    )  # fmt: skip
    faults = settings_from_args(args).faults
    assert (faults.seed, faults.loop_rate, faults.malformed_tool_call_rate) == (7, 0.5, 0.25)
    assert (faults.truncate_context_tokens, faults.substitute_model) == (2048, True)
    assert (faults.latency_spike_rate, faults.latency_spike_s) == (0.1, 3.0)
    assert (faults.error_burst_rate, faults.error_burst_length) == (0.02, 4)
    assert (faults.error_burst_status, faults.cut_stream_rate) == (429, 0.3)
    assert settings_from_args(_parse()).faults.substitute_model is False
    assert run(_parse("--loop-rate", "2")) == 2


async def test_cli_serves_until_interrupted() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RUN_CLI, "--port", "0", "--model", "m1", "--model", "m2",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), timeout=20)).decode()
        assert line.startswith("emulator listening on http://127.0.0.1:")
        base_url = line.split()[-1]
        async with httpx.AsyncClient(base_url=base_url) as http:
            models = (await http.get("/models")).json()
            assert [model["id"] for model in models["data"]] == ["m1", "m2"]
            body = {"model": "m2", "prompt": "x", "max_tokens": 2, "stream": True}
            streamed = await http.post("/completions", json=body)
            assert streamed.text.endswith("data: [DONE]\n\n")
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_batched_settings_from_args() -> None:
    args = _parse(
        "--cost-model", "batched", "--kv-capacity-tokens", "5000", "--block-tokens", "32",
        "--prefill-tokens-per-s", "2000", "--decode-base-ms", "4", "--decode-per-seq-ms", "0.5",
        "--max-batched-tokens", "1024", "--max-num-seqs", "8", "--bytes-per-token", "3.5",
        "--fleet", "3",
    )  # fmt: skip
    settings = settings_from_args(args)
    assert settings.cost_model == "batched"
    assert (settings.kv_capacity_tokens, settings.block_tokens) == (5000, 32)
    assert (settings.prefill_tokens_per_s, settings.bytes_per_token) == (2000, 3.5)
    assert (settings.decode_base_ms, settings.decode_per_seq_ms) == (4, 0.5)
    assert (settings.max_batched_tokens, settings.max_num_seqs) == (1024, 8)
    assert args.fleet == 3
    with pytest.raises(SystemExit):
        _parse("--cost-model", "quadratic")
    assert run(_parse("--fleet", "0")) == 2
    assert run(_parse("--kv-capacity-tokens", "8")) == 2  # less than one block


async def test_cli_fleet_prints_one_line_per_engine_and_stops_on_sigterm() -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RUN_CLI, "--port", "0", "--fleet", "2",
        "--cost-model", "batched", "--time-scale", "0.01",
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        urls = []
        for _ in range(2):
            line = (await asyncio.wait_for(process.stdout.readline(), timeout=20)).decode()
            assert line.startswith("emulator listening on http://127.0.0.1:")
            urls.append(line.split()[-1])
        assert len(set(urls)) == 2
        async with httpx.AsyncClient() as http:
            for url in urls:
                body = chat_request(max_tokens=2)
                assert (await http.post(f"{url}/chat/completions", json=body)).status_code == 200
        process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()


def test_help_says_one_port_serves_every_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    assert "the OpenAI, Anthropic and Gemini formats on one port" in shown
    assert "Anthropic's /messages under http://HOST:PORT/v1" in shown
