"""`switchyard db upgrade | downgrade | current`, in-process, against a SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gateway.cli import main
from gateway.store.config import DATABASE_URL_ENV
from tests.conftest import make_config


@pytest.fixture
def env_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite+aiosqlite:///{tmp_path}/cli/store.db"
    monkeypatch.setenv(DATABASE_URL_ENV, url)
    return url


def test_upgrade_current_and_downgrade(env_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out == f"{env_url}: revision none (no tables)\n"
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out == f"{env_url}: revision 0005\n"
    assert main(["db", "current"]) == 0
    assert capsys.readouterr().out == f"{env_url}: revision 0005\n"
    assert main(["db", "downgrade", "base"]) == 0
    assert capsys.readouterr().out == f"{env_url}: revision none (no tables)\n"


def test_an_unknown_revision_is_a_usage_error(
    env_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["db", "upgrade", "--revision", "0999"]) == 2
    assert "0999" in capsys.readouterr().err


def write_config(tmp_path: Path, store: dict[str, Any]) -> str:
    config = make_config({"a": "http://127.0.0.1:9/v1"}, store=store)
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


def test_the_url_can_come_from_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    url = f"sqlite+aiosqlite:///{tmp_path}/from-config.db"
    assert main(["db", "upgrade", "--config", write_config(tmp_path, {"url": url})]) == 0
    assert capsys.readouterr().out == f"{url}: revision 0005\n"


def test_no_url_anywhere_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)
    assert main(["db", "current", "--config", write_config(tmp_path, {})]) == 2
    assert DATABASE_URL_ENV in capsys.readouterr().err


def test_an_unreachable_database_fails_without_showing_the_password(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "postgresql+asyncpg://root:s3cret-pw@127.0.0.1:1/x")
    assert main(["db", "upgrade"]) == 1
    err = capsys.readouterr().err
    assert "root:***@127.0.0.1:1/x" in err and "s3cret-pw" not in err


def test_the_environment_url_is_normalised_like_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, f"sqlite:///{tmp_path}/plain.db")
    assert main(["db", "upgrade"]) == 0
    assert capsys.readouterr().out == f"sqlite+aiosqlite:///{tmp_path}/plain.db: revision 0005\n"


def test_an_environment_url_for_another_database_is_a_config_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DATABASE_URL_ENV, "mysql://root:s3cret-pw@db/x")
    assert main(["db", "current"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"config error in environment:\n  {DATABASE_URL_ENV}: expected ")
    assert "s3cret-pw" not in err
