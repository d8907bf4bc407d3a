"""Values a prompt states for named fields, and schemas filled with them (the oracle's reading)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from emulator.content.stated_values import fill_schema, name_words, stated_value


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("order_id", ["order", "id"]),
        ("orderId", ["order", "id"]),
        ("ship-to-city", ["ship", "to", "city"]),
        ("HTTPStatus", ["http", "status"]),
        ("line2", ["line", "2"]),
    ],
)
def test_a_names_words(name: str, words: list[str]) -> None:
    assert name_words(name) == words


@pytest.mark.parametrize(
    ("text", "words", "value"),
    [
        ("Order id: 4821.", ["order", "id"], "4821"),
        ("The order_id is 4821, shipped.", ["order", "id"], "4821"),
        ("The customer's name is Maria Lopez. She", ["customer", "name"], "Maria Lopez"),
        ("city = Oslo; unit = celsius", ["city"], "Oslo"),
        ("The amount was 250.50 in total.", ["amount"], "250.50 in total"),
        ("Email: ana.lima@example.com. Next", ["email"], "ana.lima@example.com"),
        ('The title is "Fix it, now." today', ["title"], "Fix it, now."),
        ("(priority: high)", ["priority"], "high"),
        ("Status: pending.\nLater: Status: shipped.", ["status"], "shipped"),
        ("STATUS IS Shipped", ["status"], "Shipped"),
        ("The substatus: wrong. ", ["status"], None),
        ("The status of the order is shipped.", ["status"], None),
        ("no statement here", ["status"], None),
    ],
)
def test_stated_value(text: str, words: list[str], value: str | None) -> None:
    assert stated_value(text, words) == value


ORDER = {
    "type": "object",
    "properties": {
        "order_id": {"type": "integer"},
        "status": {"type": "string", "enum": ["pending", "shipped", "delivered"]},
        "gift_wrapped": {"type": "boolean"},
        "amount": {"type": "number"},
        "note": {"type": ["string", "null"], "minLength": 3},
        "customer": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "vip": {"type": "boolean"}},
            "required": ["name", "vip"],
        },
    },
    "required": ["order_id", "status", "gift_wrapped", "amount", "note", "customer"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "Order id: 4821. Status: Shipped. Gift wrapped: yes. Amount: 19.99. Note: handle "
            "with care. The customer's name is Ana Lima, the customer vip is no.",
            {
                "order_id": 4821,
                "status": "shipped",
                "gift_wrapped": True,
                "amount": 19.99,
                "note": "handle with care",
                "customer": {"name": "Ana Lima", "vip": False},
            },
        ),
        # Values that do not fit the schema, and fields not stated, get its examples.
        (
            "Order id: soon. Status: lost. Gift wrapped: maybe. Amount: 3. Note: ok. Name: Bo.",
            {
                "order_id": 1,
                "status": "pending",
                "gift_wrapped": True,
                "amount": 3,
                "note": "example",
                "customer": {"name": "Bo", "vip": True},
            },
        ),
        ("Order id: 12.5.", {"order_id": 1}),
    ],
)
def test_fill_schema_uses_what_fits_and_validates(text: str, expected: dict[str, Any]) -> None:
    document = fill_schema(ORDER, text)
    jsonschema.validate(document, ORDER)
    assert document == {**document, **expected}


def test_a_nested_field_prefers_its_whole_path() -> None:
    schema = {
        "type": "object",
        "properties": {
            "customer": {"type": "object", "properties": {"name": {"type": "string"}}},
            "product": {"type": "object", "properties": {"name": {"type": "string"}}},
        },
    }
    text = "The customer's name is Ana Lima. Product name: Kettle."
    assert fill_schema(schema, text) == {
        "customer": {"name": "Ana Lima"},
        "product": {"name": "Kettle"},
    }
