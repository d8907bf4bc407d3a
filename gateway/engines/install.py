"""Making sure llama.cpp's server (the `xllamacpp` wheel) is importable by the Python that
will run the replicas, installing it with pip when it is not.

The check runs in a child process of that Python: importing xllamacpp loads llama.cpp's
shared library, which the launching process never needs, and a wheel that installs but
cannot load on this machine (an old glibc) fails the check as it should.
"""

from __future__ import annotations

import subprocess
import sys

from gateway.engines.errors import EngineUnavailable

DISTRIBUTION = "xllamacpp"
CHECK_TIMEOUT_S = 60.0
INSTALL_TIMEOUT_S = 900.0


def importable(module: str = DISTRIBUTION, *, python: str = sys.executable) -> bool:
    """Whether `python -c "import MODULE"` succeeds."""
    try:
        done = subprocess.run(
            [python, "-c", f"import {module}"],
            capture_output=True,
            timeout=CHECK_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def ensure_xllamacpp(*, python: str = sys.executable, install: bool = True) -> None:
    """Return when `xllamacpp` imports in `python`'s environment; else install it with
    `python -m pip install xllamacpp` (saying so on stderr) and check again."""
    if importable(python=python):
        return
    hint = f"{python} -m pip install {DISTRIBUTION}  (or: pip install -e '.[engines]')"
    if not install:
        raise EngineUnavailable(f"{DISTRIBUTION} is not installed; run: {hint}")
    print(
        f"{DISTRIBUTION} (llama.cpp's server) is not installed for {python}; "
        f"installing it with pip ...",
        file=sys.stderr,
        flush=True,
    )
    _pip_install(python, hint)
    if not importable(python=python):
        raise EngineUnavailable(
            f"{DISTRIBUTION} installed but does not import in {python}; "
            f"try `{python} -c 'import {DISTRIBUTION}'` to see why"
        )


def _pip_install(python: str, hint: str) -> None:
    command = [python, "-m", "pip", "install", "--quiet", DISTRIBUTION]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise EngineUnavailable(f"pip install {DISTRIBUTION}: no answer; run: {hint}") from None
    except OSError as exc:
        raise EngineUnavailable(f"cannot run {python}: {exc.strerror}") from None
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:]) or f"exit {done.returncode}"
        raise EngineUnavailable(f"pip install {DISTRIBUTION} failed: {tail}")
