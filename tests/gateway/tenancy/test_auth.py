"""Who may call what: client, operator, admin and metrics checks, and where the gateway
may listen without keys."""

from __future__ import annotations

import pytest

from gateway.cli import main
from gateway.config.root import parse_config
from gateway.errors import ConfigError, Forbidden, Unauthorized
from gateway.tenancy.auth import Authenticator, env_keys, exposure_problem, static_key_id
from gateway.tenancy.wiring import check_exposure
from tests.conftest import make_config


def test_with_no_keys_everything_is_open_but_the_admin_api() -> None:
    auth = Authenticator()
    assert auth.client(None) is None and auth.operator(None) is None
    auth.metrics(None)
    with pytest.raises(Forbidden):
        auth.admin("Bearer anything")


def test_static_keys_are_callers_with_their_short_id() -> None:
    auth = Authenticator(["k1", "k2"])
    caller = auth.client("Bearer k2")
    assert caller is not None and (caller.key_id, caller.kind) == (static_key_id("k2"), "static")
    for wrong in (None, "Bearer k3", "Basic k1", "Bearer ", "k1"):
        with pytest.raises(Unauthorized):
            auth.client(wrong)


def test_admin_keys_guard_operator_data_once_configured() -> None:
    auth = Authenticator(["client"], ["admin"])
    assert auth.operator("Bearer admin") is not None
    assert auth.admin("Bearer admin").kind == "admin"
    with pytest.raises(Forbidden):
        auth.operator("Bearer client")
    with pytest.raises(Unauthorized):
        auth.admin("Bearer nobody")
    with pytest.raises(Unauthorized):
        auth.client("Bearer admin")  # an admin key is not a client key


def test_without_admin_keys_operator_data_takes_client_keys_as_before() -> None:
    auth = Authenticator(["client"])
    assert auth.operator("Bearer client") is not None


def test_the_metrics_token() -> None:
    auth = Authenticator(metrics_token="m-token")
    auth.metrics("Bearer m-token")
    for wrong in (None, "Bearer other"):
        with pytest.raises(Unauthorized):
            auth.metrics(wrong)


def test_a_named_but_empty_variable_refuses(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SY_TEST_EMPTY", " , ")
    with pytest.raises(ValueError) as caught:
        env_keys("SY_TEST_EMPTY", "server.admin_keys_env")
    assert str(caught.value) == "server.admin_keys_env: SY_TEST_EMPTY is unset or empty"


@pytest.mark.parametrize(
    ("host", "keys", "allowed", "refused"),
    [
        ("127.0.0.1", False, False, False),
        ("::1", False, False, False),
        ("localhost", False, False, False),
        ("0.0.0.0", False, False, True),
        ("10.1.2.3", False, False, True),
        ("0.0.0.0", True, False, False),
        ("0.0.0.0", False, True, False),
    ],
)
def test_only_loopback_may_go_without_keys(
    host: str, keys: bool, allowed: bool, refused: bool
) -> None:
    assert (exposure_problem(host, keys, allowed) is not None) is refused


def test_serving_elsewhere_without_keys_names_the_settings() -> None:
    config = parse_config(make_config({"a": "http://127.0.0.1:9/v1"}))
    with pytest.raises(ConfigError) as caught:
        check_exposure(config, "0.0.0.0")
    assert "server.allow_unauthenticated: true" in caught.value.problems[0]
    allowed = make_config({"a": "http://127.0.0.1:9/v1"}, server={"allow_unauthenticated": True})
    check_exposure(parse_config(allowed), "0.0.0.0")


def test_serve_refuses_a_public_address_without_keys(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "server.host: 0.0.0.0 is not a loopback address" in err
