"""Dev helper: render the dashboard on sample data in headless Chromium (not a test module).

    python tests/gateway/render_dashboard.py                       # fleet page DOM
    python tests/gateway/render_dashboard.py --hash '#/backend/engine-b' --screenshot /tmp/b.png

Serves gateway/telemetry/dashboard/static and the sample JSON at the data API's path on loopback,
the way the gateway does, so the page runs unchanged; `--require-key` answers 401 without
that bearer key, to see the key form.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STATIC_DIR = ROOT / "gateway" / "telemetry" / "dashboard" / "static"
SAMPLE = Path(__file__).resolve().parent / "dashboard_sample.json"
DATA_PATH = "/v1/switchyard/dashboard"
CHROMIUM = "/usr/bin/chromium"
_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
}
# The gateway's policy, so that anything it would block fails here too.
_CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "connect-src 'self'; frame-ancestors 'none'"
)
_UNAUTHORISED = (
    b'{"error": {"message": "Invalid or missing API key.", '
    b'"type": "authentication_error", "param": null, "code": "invalid_api_key"}}'
)


def _handler(sample: bytes, key: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == DATA_PATH:
                if key is not None and self.headers.get("Authorization") != f"Bearer {key}":
                    return self._send(401, "application/json", _UNAUTHORISED)
                return self._send(200, "application/json", sample)
            if path in ("/dashboard", "/dashboard/"):
                return self._file(STATIC_DIR / "index.html")
            name = path.removeprefix("/dashboard/static/")
            # A plain file name only: nothing outside the static folder is served.
            if name != path and "/" not in name and (STATIC_DIR / name).is_file():
                return self._file(STATIC_DIR / name)
            self._send(404, "text/plain", b"not found")

        def _file(self, file: Path) -> None:
            self._send(200, _TYPES.get(file.suffix, "application/octet-stream"), file.read_bytes())

        def _send(self, status: int, content_type: str, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Security-Policy", _CSP)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep stdout for the DOM

    return Handler


@contextmanager
def serve(sample: Path = SAMPLE, key: str | None = None) -> Iterator[str]:
    """Serve the dashboard on a free loopback port; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(sample.read_bytes(), key))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def chromium(url: str, *mode: str) -> str:
    """Run headless Chromium on `url` with `--dump-dom` or screenshot flags; returns stdout."""
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={profile}", "--virtual-time-budget=8000",
             *mode, url],
            capture_output=True, text=True, timeout=120, check=True,
        )  # fmt: skip
    return done.stdout


def render(
    hash_route: str = "#/",
    screenshot: Path | None = None,
    sample: Path = SAMPLE,
    key: str | None = None,
) -> str:
    """The page's DOM after load, or "" having saved a 1400x2200 screenshot."""
    with serve(sample, key) as base:
        url = f"{base}/dashboard{hash_route}"
        if screenshot is None:
            return chromium(url, "--dump-dom")
        chromium(url, f"--screenshot={screenshot}", "--window-size=1400,2200")
        return ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hash", default="#/", help="route, e.g. '#/backend/engine-b'")
    parser.add_argument("--screenshot", type=Path, help="save a PNG here instead of the DOM")
    parser.add_argument("--sample", type=Path, default=SAMPLE, help="data API answer to serve")
    parser.add_argument("--require-key", help="answer 401 unless this bearer key is sent")
    args = parser.parse_args()
    dom = render(args.hash, args.screenshot, args.sample, args.require_key)
    print(dom if args.screenshot is None else f"saved {args.screenshot}")


if __name__ == "__main__":
    main()
