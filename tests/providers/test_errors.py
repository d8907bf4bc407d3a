"""The provider error tree: each class's status, OpenAI type and code, and retryability."""

from __future__ import annotations

import orjson
import pytest

from providers.errors import (
    ApiError,
    KeySource,
    MissingDeployment,
    UnsupportedRequest,
    UpstreamConnectError,
    UpstreamCredentialsRefused,
    UpstreamError,
    UpstreamNotFound,
    UpstreamProtocolError,
    UpstreamResponseTooLarge,
    UpstreamStatusError,
    UpstreamTimeout,
)


@pytest.mark.parametrize(
    ("error", "status", "type_", "code", "retryable"),
    [
        (ApiError("bug"), 500, "server_error", "internal_error", False),
        (UpstreamError("x", backend="a"), 502, "upstream_error", "bad_gateway", True),
        (
            UpstreamConnectError("x", backend="a"),
            502,
            "upstream_error",
            "upstream_connect_error",
            True,
        ),
        (
            UpstreamProtocolError("x", backend="a"),
            502,
            "upstream_error",
            "upstream_protocol_error",
            True,
        ),
        (UpstreamTimeout("x", backend="a"), 504, "timeout_error", "upstream_timeout", True),
        (
            UpstreamCredentialsRefused(backend="a", upstream_status=401),
            502,
            "upstream_error",
            "upstream_credentials_refused",
            True,
        ),
        (
            UpstreamResponseTooLarge("x", backend="a"),
            502,
            "upstream_error",
            "upstream_response_too_large",
            False,
        ),
        (UnsupportedRequest("x"), 400, "invalid_request_error", "unsupported_parameter", False),
        (MissingDeployment("x"), 400, "invalid_request_error", "missing_model", False),
    ],
    ids=lambda value: type(value).__name__ if isinstance(value, Exception) else None,
)
def test_each_class_describes_itself(
    error: ApiError, status: int, type_: str, code: str, retryable: bool
) -> None:
    assert (error.status, error.type, error.code, error.retryable) == (
        status,
        type_,
        code,
        retryable,
    )
    assert error.param is None
    assert error.retry_after_s is None


@pytest.mark.parametrize(
    ("upstream_status", "status", "type_", "retryable"),
    [
        (400, 400, "upstream_error", False),
        (404, 404, "upstream_error", False),
        (413, 413, "upstream_error", False),
        (429, 429, "rate_limit_error", True),
        (500, 502, "upstream_error", True),
        (503, 502, "upstream_error", True),
        (502, 502, "upstream_error", True),
    ],
)
def test_a_status_error_takes_its_shape_from_the_backends_status(
    upstream_status: int, status: int, type_: str, retryable: bool
) -> None:
    error = UpstreamStatusError(
        "backend a answered", backend="a", upstream_status=upstream_status, retry_after_s=2.5
    )
    assert (error.status, error.type, error.retryable) == (status, type_, retryable)
    assert error.code == f"upstream_{upstream_status}"
    assert error.retry_after_s == 2.5
    assert UpstreamStatusError.type == "upstream_error", "instances do not change the class"


def test_message_backend_param_and_code_are_kept() -> None:
    error = UpstreamError("backend b broke", backend="b", code="custom")
    assert (str(error), error.message, error.backend, error.code) == (
        "backend b broke",
        "backend b broke",
        "b",
        "custom",
    )
    assert ApiError("bad", param="model").param == "model"


def test_one_root_for_every_upstream_error() -> None:
    for cls in (
        UpstreamConnectError,
        UpstreamProtocolError,
        UpstreamTimeout,
        UpstreamStatusError,
        UnsupportedRequest,
        MissingDeployment,
    ):
        assert issubclass(cls, UpstreamError)
    assert issubclass(UpstreamError, ApiError)
    assert issubclass(UpstreamCredentialsRefused, UpstreamStatusError)


@pytest.mark.parametrize(
    ("status", "reason", "message"),
    [
        (401, None, "backend a: upstream rejected the gateway's credentials (HTTP 401)"),
        (
            403,
            "PERMISSION_DENIED",
            "backend a: upstream rejected the gateway's credentials (HTTP 403 PERMISSION_DENIED)",
        ),
        # Anything but an error-type name is left out: it could quote the key.
        (
            401,
            "bad key sk-123",
            "backend a: upstream rejected the gateway's credentials (HTTP 401)",
        ),
    ],
)
def test_refused_credentials_name_the_status_and_nothing_upstream_wrote(
    status: int, reason: str | None, message: str
) -> None:
    error = UpstreamCredentialsRefused(backend="a", upstream_status=status, reason=reason)
    assert error.message == message
    assert (error.upstream_status, error.upstream_body, error.retry_after_s) == (status, b"", None)
    assert UpstreamStatusError.code == "bad_gateway", "instances do not change the class"


@pytest.mark.parametrize(
    ("key", "rejected"),
    [
        (
            KeySource.of("sk-the-key", "OPENAI_API_KEY"),
            "upstream rejected the credentials from OPENAI_API_KEY",
        ),
        (
            KeySource.of(None, "OPENAI_API_KEY"),
            "upstream rejected a request sent without credentials: "
            "OPENAI_API_KEY is unset or empty",
        ),
        (
            KeySource.of(None, None),
            "upstream rejected a request sent without credentials: no api_key_env is configured",
        ),
        (KeySource.of("sk-the-key", None), "upstream rejected the gateway's credentials"),
    ],
    ids=["named-and-sent", "named-but-unset", "none-named", "sent-from-elsewhere"],
)
def test_a_refusal_names_the_variable_the_key_came_from(key: KeySource, rejected: str) -> None:
    error = UpstreamCredentialsRefused(backend="oa", upstream_status=401, key=key)
    assert error.message == f"backend oa: {rejected} (HTTP 401)"
    assert error.key_env == key.env
    assert "sk-the-key" not in error.message + repr(error) + repr(key)


@pytest.mark.parametrize(
    ("said", "provider_url", "message"),
    [
        (
            None,
            "https://api.anthropic.com/v1",
            "backend 'claude' answered HTTP 404 for POST /messages: is its base_url right? "
            "Its provider's is https://api.anthropic.com/v1",
        ),
        (
            None,
            None,
            "backend 'claude' answered HTTP 404 for POST /messages: is its base_url right?",
        ),
        (
            "model: claude-nine",
            "https://api.anthropic.com/v1",
            "backend 'claude' answered HTTP 404 for POST /messages: model: claude-nine",
        ),
    ],
    ids=["nothing-said", "no-provider", "said"],
)
def test_a_404_names_the_backend_and_the_path_asked(
    said: str | None, provider_url: str | None, message: str
) -> None:
    error = UpstreamNotFound(
        backend="claude", asked="POST /messages", said=said, provider_url=provider_url
    )
    assert error.message == message
    # A 404 stays a 404 (OpenAI's unknown model), not retried, and counts as upstream_404.
    assert (error.status, error.retryable, error.code) == (404, False, "upstream_404")
    assert isinstance(error, UpstreamStatusError)


@pytest.mark.parametrize(
    ("upstream_body", "relayed"),
    [
        # OpenAI's own: its type and code kept for clients that act on them.
        (
            b'{"error": {"message": "The model `gpt-9` does not exist", "type": '
            b'"invalid_request_error", "param": null, "code": "model_not_found"}}',
            {"type": "invalid_request_error", "param": None, "code": "model_not_found"},
        ),
        (b'{"detail": "Not Found"}', None),
        (b"<html>Not Found</html>", None),
        (b"", None),
    ],
    ids=["openai-shaped", "fastapi", "html", "empty"],
)
def test_a_404_relays_its_message_in_the_upstreams_error_object_or_none(
    upstream_body: bytes, relayed: dict[str, object] | None
) -> None:
    error = UpstreamNotFound(backend="gpt", asked="POST /v1/x", upstream_body=upstream_body)
    if relayed is None:
        assert error.upstream_body == b"", "the host answers in its own shape"
    else:
        assert orjson.loads(error.upstream_body) == {"error": {"message": error.message, **relayed}}
