"""Reload the gateway in this pod when its mounted config changes: the reloader sidecar.

The kubelet updates a ConfigMap volume in place (an atomic swap of the files behind the
mount, within a minute or two of the ConfigMap's change), but the gateway reads its file
only when told to. This loop reads the file every `SWITCHYARD_RELOAD_INTERVAL_S` seconds
and, when its bytes change, asks the gateway of its own pod to reload
(`POST $SWITCHYARD_RELOAD_URL` with the first key of `SWITCHYARD_ADMIN_KEYS`): HTTP on
loopback, so the containers need no shared process namespace.

Each content is asked for until the gateway settles it: taken (200), or refused for good
(400 `invalid_config`, 409 `restart_required`), each logged with the gateway's reasons.
Anything else (the gateway still starting, another reload under way, a new config that
would not start) is asked again, backing off to `MAX_BACKOFF_S`. No key is ever logged.
Standard library only: it runs on the gateway's image.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import signal
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BACKOFF_S = 60.0
log = logging.getLogger("reloader")


@dataclass(frozen=True, slots=True)
class Settings:
    config: Path
    url: str
    admin_key: str
    interval_s: float

    @classmethod
    def from_env(cls) -> Settings:
        keys = [k.strip() for k in os.environ.get("SWITCHYARD_ADMIN_KEYS", "").split(",")]
        if not any(keys):
            sys.exit("reloader: SWITCHYARD_ADMIN_KEYS is unset or empty")
        return cls(
            config=Path(os.environ.get("SWITCHYARD_CONFIG", "/etc/switchyard/config.yaml")),
            url=os.environ.get(
                "SWITCHYARD_RELOAD_URL", "http://127.0.0.1:8080/v1/switchyard/admin/reload"
            ),
            admin_key=next(k for k in keys if k),
            interval_s=float(os.environ.get("SWITCHYARD_RELOAD_INTERVAL_S", "5")),
        )


def digest(path: Path) -> str | None:
    """The file's SHA-256, or None while it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def ask_reload(settings: Settings) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) of one reload request; status 0 when the gateway did not answer."""
    request = urllib.request.Request(
        settings.url,
        data=b"",
        method="POST",
        headers={"authorization": f"Bearer {settings.admin_key}"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, _json(response.read())
    except urllib.error.HTTPError as error:
        return error.code, _json(error.read())
    except (OSError, http.client.HTTPException) as error:  # refused, reset, timed out
        return 0, {"error": {"code": "unreachable", "message": str(error)}}


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _error(body: dict[str, Any]) -> dict[str, Any]:
    error = body.get("error")
    return error if isinstance(error, dict) else {}


def settled(status: int, body: dict[str, Any]) -> bool:
    """Whether this answer ends the asking for the content it was about."""
    code = _error(body).get("code")
    return status in (200, 400) or (status == 409 and code == "restart_required")


def describe(status: int, body: dict[str, Any]) -> str:
    if status == 200:
        changes = "; ".join(f"{s}: {_counts(body.get(s, {}))}" for s in ("backends", "routes"))
        return f"config reloaded (generation {body.get('generation')}): {changes}"
    error = _error(body)
    message = str(error.get("message"))
    problems = "".join(f"\n  {p}" for p in error.get("problems", []) if str(p) not in message)
    text = f"reload {status or 'not answered'} {error.get('code')}: {message}"
    if error.get("code") == "restart_required":
        text += " (kubectl rollout restart applies it)"
    return text + problems


def _counts(section: dict[str, list[str]]) -> str:
    return ", ".join(f"{len(names)} {what}" for what, names in section.items() if names) or "none"


def run(settings: Settings) -> None:
    applied = digest(settings.config)  # what the gateway read as it started beside us
    log.info("watching %s every %ss", settings.config, settings.interval_s)
    wait = settings.interval_s
    while True:
        time.sleep(wait)
        current = digest(settings.config)
        if current is None or current == applied:
            wait = settings.interval_s
            continue
        status, body = ask_reload(settings)
        log.info("%s", describe(status, body))
        if settled(status, body):
            applied, wait = current, settings.interval_s
        else:
            wait = min(wait * 2, MAX_BACKOFF_S)


def main() -> None:
    # PID 1 of its container: without a handler, SIGTERM would be ignored until SIGKILL.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    run(Settings.from_env())


if __name__ == "__main__":
    main()
