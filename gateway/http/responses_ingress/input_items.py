"""The items of a Responses request's `input`, as clients send them.

Messages (`type` may be left out) with text and image parts; the model's earlier
`function_call`s and the client's `function_call_output`s; and earlier `reasoning` items,
which are accepted and not sent on (OpenAI's chat has no input for them). Kinds the gateway
cannot express are refused before these models see them (`unsupported`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class TextPart(_Wire):
    """`input_text`, or `output_text` in an earlier answer sent back (annotations dropped)."""

    type: Literal["input_text", "output_text"]
    text: str


class RefusalPart(_Wire):
    """An earlier answer's refusal, sent back as the assistant's text."""

    type: Literal["refusal"]
    refusal: str


class ImagePart(_Wire):
    type: Literal["input_image"]
    image_url: str = Field(min_length=1)
    """A URL or a `data:` URL; images by `file_id` are refused."""
    detail: str | None = None


Part = Annotated[TextPart | RefusalPart | ImagePart, Field(discriminator="type")]


class MessageItem(_Wire):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: str | list[Part]


class FunctionCallItem(_Wire):
    type: Literal["function_call"]
    call_id: str = Field(min_length=1)
    name: str = Field(min_length=1)
    arguments: str


class FunctionCallOutputItem(_Wire):
    type: Literal["function_call_output"]
    call_id: str = Field(min_length=1)
    output: str | list[Part]


class ReasoningItem(_Wire):
    """An earlier turn's reasoning: accepted, not sent on."""

    type: Literal["reasoning"]


def _item_type(item: Any) -> str | None:
    """An item's kind; a message may leave its `type` out."""
    if isinstance(item, dict):
        kind = item.get("type", "message")
        return kind if isinstance(kind, str) else None
    return getattr(item, "type", None)


InputItem = Annotated[
    Annotated[MessageItem, Tag("message")]
    | Annotated[FunctionCallItem, Tag("function_call")]
    | Annotated[FunctionCallOutputItem, Tag("function_call_output")]
    | Annotated[ReasoningItem, Tag("reasoning")],
    Discriminator(_item_type),
]

ITEM_TYPES = frozenset({"message", "function_call", "function_call_output", "reasoning"})
"""The item kinds accepted, as `type` names them."""
