"""`switchyard keys create --budget-day/--budget-month` and `keys list` with spend."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import orjson
import pytest
import yaml

from gateway.cli import main
from gateway.config.redis import RedisSettings
from gateway.tenancy.budgets.ledger import Spend, SpendLedger
from gateway.tenancy.budgets.redis_counters import RedisSpend
from gateway.tenancy.config import BudgetsConfig
from tests.gateway.tenancy.conftest import REDIS_URL
from tests.gateway.tenancy.test_keys_cli import config_path

__all__ = ["config_path"]


def test_a_key_is_created_with_budgets_and_listed_with_them(
    config_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["--config", config_path]
    created = ["keys", "create", "--name", "b", "--budget-day", "5", "--budget-month", "100"]
    assert main([*created, "--on-exhausted", "fallback", *args]) == 0
    key_id = capsys.readouterr().err.split()[0]
    assert main(["keys", "list", *args]) == 0
    listed = capsys.readouterr().out
    assert "day $ spent/limit" in listed and "?/5.00" in listed and "?/100.00" in listed
    assert main(["keys", "list", "--json", *args]) == 0
    [row] = orjson.loads(capsys.readouterr().out)
    assert row["id"] == key_id
    assert (row["budget_usd_per_day"], row["budget_on_exhausted"]) == (5.0, "fallback")
    assert row["spend"]["day"]["spent_usd"] is None  # local: each gateway's own
    assert main(["keys", "create", "--name", "x", "--budget-day", "0", *args]) == 2
    assert "budget_usd_per_day" in capsys.readouterr().err


async def _spent(settings: BudgetsConfig, namespace: str, key_id: str, usd: float) -> None:
    redis = RedisSettings(url=REDIS_URL, namespace=namespace, timeout_ms=500)
    ledger = SpendLedger(settings, RedisSpend(redis))
    ledger.record(Spend(key_id, None, "default", usd, time.time()))
    await ledger.flush()
    await ledger.close()


def test_list_reads_spend_from_redis(
    config_path: str, namespace: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = Path(config_path)
    config = yaml.safe_load(path.read_text())
    config["budgets"] = {"backend": "redis", "redis_url": REDIS_URL, "namespace": namespace}
    path.write_text(yaml.safe_dump(config))
    args = ["--config", config_path]
    assert main(["keys", "create", "--name", "b", "--budget-day", "5", *args]) == 0
    key_id = capsys.readouterr().err.split()[0]
    settings = BudgetsConfig.model_validate(config["budgets"])
    asyncio.run(_spent(settings, namespace, key_id, 1.25))
    assert main(["keys", "list", *args]) == 0
    assert "1.25/5.00" in capsys.readouterr().out
