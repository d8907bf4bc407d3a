"""Making sure xllamacpp imports, installing it with pip when it does not (here with a
stand-in interpreter: nothing is installed)."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from gateway.engines.errors import EngineUnavailable
from gateway.engines.install import ensure_xllamacpp, importable


def test_importable_asks_the_given_python() -> None:
    assert importable("json", python=sys.executable)
    assert not importable("no_such_module_for_switchyard_tests", python=sys.executable)
    assert not importable("json", python="/nonexistent/python")


def broken_python(tmp_path: Path) -> str:
    """Fails every command: imports and `pip install` alike."""
    path = tmp_path / "python"
    path.write_text("#!/bin/sh\necho 'ERROR: No matching distribution found' >&2\nexit 1\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def test_without_install_the_error_says_how(tmp_path: Path) -> None:
    with pytest.raises(EngineUnavailable, match="pip install xllamacpp"):
        ensure_xllamacpp(python=broken_python(tmp_path), install=False)


def test_a_failed_install_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(EngineUnavailable, match="No matching distribution"):
        ensure_xllamacpp(python=broken_python(tmp_path))
    assert "installing it with pip" in capsys.readouterr().err
