"""`serve --pid-file PATH`: the pid of the process that takes this gateway's signals (SIGHUP
reloads, SIGTERM drains), for `kill -HUP "$(cat PATH)"`: the parent of `--workers N`, else
the one process. Removed at exit, unless another process has written its own pid there."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path


@contextmanager
def pid_file(path: Path | None) -> Iterator[None]:
    """This process's pid in `path` while the context is open (nothing when None)."""
    if path is None:
        yield
        return
    pid = str(os.getpid())
    path.write_text(pid + "\n", encoding="ascii")
    try:
        yield
    finally:
        with suppress(OSError):
            if path.read_text(encoding="ascii").strip() == pid:
                path.unlink()
