"""`switchyard keys create|list|rotate|revoke` against SQLite in a temporary directory."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from gateway.cli import main
from tests.conftest import make_config


@pytest.fixture
def config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("SWITCHYARD_KEY_SECRET", "c" * 32)
    store = {"url": f"sqlite+aiosqlite:///{tmp_path / 'cli.db'}"}
    path = tmp_path / "config.yaml"
    keys = {"enabled": True}
    config = make_config({"a": "http://127.0.0.1:9/v1"}, store=store, keys=keys)
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_create_list_rotate_revoke(config_path: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--config", config_path]
    assert main(["keys", "create", "--name", "ci", "--team", "infra", "--rpm", "60", *args]) == 0
    made = capsys.readouterr()
    key = made.out.strip()
    assert key.startswith("sk-sy-") and "shown this once" in made.err
    key_id = made.err.split()[0]

    assert main(["keys", "list", *args]) == 0
    listed = capsys.readouterr().out
    assert key_id in listed and key[:16] + "…" in listed and "infra" in listed
    assert key[16:] not in listed

    assert main(["keys", "rotate", key_id, *args]) == 0
    rotated = capsys.readouterr().out.strip()
    assert rotated.startswith("sk-sy-") and rotated != key

    assert main(["keys", "revoke", key_id, *args]) == 0
    assert capsys.readouterr().out == f"{key_id} revoked\n"
    assert main(["keys", "revoke", key_id, *args]) == 1
    assert main(["keys", "list", "--all", "--json", *args]) == 0
    [row] = orjson.loads(capsys.readouterr().out)
    assert (row["id"], row["status"], row["rpm"]) == (key_id, "revoked", 60)
    assert "secret_hash" not in row and rotated[16:] not in str(row)


def test_bad_input_and_a_missing_secret_are_usage_errors(
    config_path: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["--config", config_path]
    assert main(["keys", "create", "--name", "x", "--route", "nope", *args]) == 2
    assert "unknown route(s) nope" in capsys.readouterr().err
    assert main(["keys", "create", "--name", "x", "--rpm", "0", *args]) == 2
    assert "rpm" in capsys.readouterr().err
    monkeypatch.delenv("SWITCHYARD_KEY_SECRET")
    assert main(["keys", "list", *args]) == 2
    assert "SWITCHYARD_KEY_SECRET" in capsys.readouterr().err


def test_create_and_rotate_say_when_the_config_does_not_enforce_keys(
    config_path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    warning = (
        "warning: keys are not enforced by this config (keys.enabled is false): a gateway "
        "serving it checks no virtual key, this one included. To enforce them, set:\n"
        "  keys: {enabled: true}   # with store.url and $SWITCHYARD_KEY_SECRET; "
        "demo traffic then stops\n"
    )
    loose = yaml.safe_load(Path(config_path).read_text())
    del loose["keys"]
    path = str(tmp_path / "loose.yaml")
    Path(path).write_text(yaml.safe_dump(loose))
    assert main(["keys", "create", "--name", "loose", "--config", path]) == 0
    made = capsys.readouterr()
    assert made.out.startswith("sk-sy-") and made.err.startswith(warning)
    key_id = made.err.removeprefix(warning).split()[0]
    assert main(["keys", "rotate", key_id, "--config", path]) == 0
    assert capsys.readouterr().err.startswith(warning)
    assert main(["keys", "list", "--config", path]) == 0
    assert "warning" not in capsys.readouterr().err
    # The same store with keys enabled: nothing to warn of.
    assert main(["keys", "create", "--name", "strict", "--config", config_path]) == 0
    assert "warning" not in capsys.readouterr().err
