"""Servers under test: a server is ready only when it answers on its own port."""

from __future__ import annotations

import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.procs import Server, StartError, owns_port

pytestmark = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads Linux /proc")


class _Ok(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def foreign_port() -> Iterator[int]:
    """An HTTP server of this test process's own on a loopback port."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Ok)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()


def test_a_port_answered_by_another_process_is_not_mistaken_for_the_server(
    tmp_path: Path, foreign_port: int
) -> None:
    server = Server("idle", [sys.executable, "-c", "import time; time.sleep(30)"], tmp_path / "log")
    try:
        with pytest.raises(StartError, match="another process answers"):
            server.wait_ready(f"http://127.0.0.1:{foreign_port}/healthz", timeout_s=10)
    finally:
        server.stop()


def test_the_server_that_listens_is_ready(tmp_path: Path) -> None:
    code = (
        "import http.server, sys\n"
        "class H(http.server.BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        self.send_response(200); self.send_header('content-length', '0')\n"
        "        self.end_headers()\n"
        "s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
        "print(s.server_address[1], flush=True)\n"
        "s.serve_forever()\n"
    )
    log = tmp_path / "log"
    server = Server("http", [sys.executable, "-c", code], log)
    try:
        port = _first_line(log)
        server.wait_ready(f"http://127.0.0.1:{port}/", timeout_s=10)
        assert owns_port(server.pid, port)
    finally:
        server.stop()


def _first_line(log: Path) -> int:
    for _ in range(200):
        text = log.read_text()
        if "\n" in text:
            return int(text.split("\n", 1)[0])
        threading.Event().wait(0.05)
    raise AssertionError("the server never printed its port")
