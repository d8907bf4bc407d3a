"""Reads OpenAI request bodies into plain generation requests, without pydantic on the hot path."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from emulator.content.text import estimate_tokens

DEFAULT_MAX_TOKENS = 16
# Bounds keep one request from allocating gigabytes of pre-rendered chunks.
MAX_TOKENS_LIMIT = 131_072
MAX_CHOICES = 128
MAX_TOP_LOGPROBS = 20


class BadRequest(Exception):
    """A request the emulator refuses; rendered as an OpenAI error body."""

    def __init__(
        self,
        message: str,
        param: str | None = None,
        *,
        status: int = 400,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status
        self.code = code


@dataclass(frozen=True, slots=True)
class Sampling:
    """Fields shared by chat and text completions."""

    n: int
    seed: int | None
    stop: tuple[str, ...]
    stream: bool
    include_usage: bool


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The function the emulator calls, and the names of every function the request declared."""

    name: str
    parameters: object
    declared: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class GenerationRequest:
    """What to generate for a chat or text completion request."""

    model: str
    prompts: tuple[str, ...]
    prompt_tokens: tuple[int, ...]
    sampling: Sampling
    max_tokens: int
    top_logprobs: int | None  # None: no logprobs; otherwise how many alternatives
    tool: ToolSpec | None = None
    json_schema: object | None = None
    json_object: bool = False
    thinking_tokens: int = 0  # thinking before the answer, on top of max_tokens


@dataclass(frozen=True, slots=True)
class EmbeddingRequest:
    model: str
    inputs: tuple[str, ...]
    prompt_tokens: int
    dimensions: int | None
    base64: bool


def parse_json_body(raw: bytes) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise BadRequest(f"Request body is not valid JSON: {exc}") from exc
    if not isinstance(body, dict):
        raise BadRequest("Request body must be a JSON object.")
    return body


def parse_chat(body: dict[str, Any]) -> GenerationRequest:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("'messages' must be a non-empty array.", "messages")
    prompt = "\n".join(message_text(message) for message in messages)
    logprobs = _optional_bool(body, "logprobs")
    top = _int_field(body, "top_logprobs", 0, 0, MAX_TOP_LOGPROBS)
    max_tokens = _int_or_none(body, "max_completion_tokens", 0, MAX_TOKENS_LIMIT)
    if max_tokens is None:
        max_tokens = _int_field(body, "max_tokens", DEFAULT_MAX_TOKENS, 0, MAX_TOKENS_LIMIT)
    schema, json_object = _response_format(body.get("response_format"))
    return GenerationRequest(
        model=_model(body),
        prompts=(prompt,),
        prompt_tokens=(estimate_tokens(prompt),),
        max_tokens=max_tokens,
        top_logprobs=top if logprobs else None,
        tool=_pick_tool(body),
        json_schema=schema,
        json_object=json_object,
        sampling=_sampling(body),
    )


def parse_completion(body: dict[str, Any]) -> GenerationRequest:
    prompts, counts = _completion_prompts(body.get("prompt"))
    return GenerationRequest(
        model=_model(body),
        prompts=prompts,
        prompt_tokens=counts,
        max_tokens=_int_field(body, "max_tokens", DEFAULT_MAX_TOKENS, 0, MAX_TOKENS_LIMIT),
        top_logprobs=_int_or_none(body, "logprobs", 0, MAX_TOP_LOGPROBS),
        sampling=_sampling(body),
    )


def parse_embeddings(body: dict[str, Any]) -> EmbeddingRequest:
    inputs, counts = _completion_prompts(body.get("input"), param="input")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64", None):
        raise BadRequest("'encoding_format' must be 'float' or 'base64'.", "encoding_format")
    return EmbeddingRequest(
        model=_model(body),
        inputs=inputs,
        prompt_tokens=sum(counts),
        dimensions=_int_or_none(body, "dimensions", 1, 16384),
        base64=encoding == "base64",
    )


def _sampling(body: dict[str, Any]) -> Sampling:
    stream = _optional_bool(body, "stream")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    return Sampling(
        n=_int_field(body, "n", 1, 1, MAX_CHOICES),
        seed=_int_or_none(body, "seed", None, None),
        stop=_stop_strings(body.get("stop")),
        stream=stream,
        include_usage=stream and include_usage,
    )


def _model(body: dict[str, Any]) -> str:
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise BadRequest("'model' must be a non-empty string.", "model")
    return model


def message_text(message: object) -> str:
    """The text of a chat message: its string content or its text parts, joined."""
    if not isinstance(message, dict):
        raise BadRequest("Each message must be an object.", "messages")
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content if isinstance(part, dict) and "text" in part
        )
    return ""


def _completion_prompts(
    value: object, param: str = "prompt"
) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if isinstance(value, str):
        return (value,), (estimate_tokens(value),)
    if isinstance(value, list) and value:
        if all(isinstance(item, str) for item in value):
            return tuple(value), tuple(estimate_tokens(item) for item in value)
        if all(isinstance(item, int) for item in value):
            return (_token_ids_text(value),), (len(value),)
        if all(isinstance(item, list) for item in value):
            return tuple(_token_ids_text(item) for item in value), tuple(len(i) for i in value)
    raise BadRequest(f"'{param}' must be a string, strings, or token arrays.", param)


def _token_ids_text(ids: list[Any]) -> str:
    # Only used to seed generation; the token count comes from the array length.
    return " ".join(str(token) for token in ids)


def _stop_strings(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise BadRequest("'stop' must be a string or an array of strings.", "stop")


def _pick_tool(body: dict[str, Any]) -> ToolSpec | None:
    tools = body.get("tools")
    choice = body.get("tool_choice", "auto")
    if not tools or choice == "none":
        return None
    if not isinstance(tools, list):
        raise BadRequest("'tools' must be an array.", "tools")
    functions = [
        tool["function"]
        for tool in tools
        if isinstance(tool, dict) and isinstance(tool.get("function"), dict)
    ]
    if not functions:
        raise BadRequest("'tools' holds no function definitions.", "tools")
    wanted = choice.get("function", {}).get("name") if isinstance(choice, dict) else None
    chosen = next((f for f in functions if f.get("name") == wanted), None) if wanted else None
    if wanted and chosen is None:
        raise BadRequest(f"'tool_choice' names unknown function {wanted!r}.", "tool_choice")
    chosen = chosen or functions[0]
    name = chosen.get("name")
    if not isinstance(name, str) or not name:
        raise BadRequest("Every function needs a non-empty 'name'.", "tools")
    declared = tuple(str(function.get("name")) for function in functions)
    parameters = chosen.get("parameters") or {"type": "object"}
    return ToolSpec(name=name, parameters=parameters, declared=declared)


def _response_format(value: object) -> tuple[object | None, bool]:
    if not isinstance(value, dict):
        return None, False
    kind = value.get("type")
    if kind == "json_object":
        return None, True
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        return schema or {"type": "object"}, False
    return None, False


def _optional_bool(body: dict[str, Any], name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(f"'{name}' must be a boolean.", name)
    return value


def _int_field(
    body: dict[str, Any], name: str, default: int, minimum: int | None, maximum: int | None
) -> int:
    value = _int_or_none(body, name, minimum, maximum)
    return default if value is None else value


def _int_or_none(
    body: dict[str, Any], name: str, minimum: int | None, maximum: int | None
) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadRequest(f"'{name}' must be an integer.", name)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise BadRequest(f"'{name}' must be between {minimum} and {maximum}.", name)
    return value
